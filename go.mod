module github.com/graft-studio/graft

go 1.26

require (
	github.com/pelletier/go-toml/v2 v2.4.3
	gopkg.in/yaml.v3 v3.0.1
)
