module github.com/graft-studio/graft

go 1.26.0

require (
	github.com/yuin/goldmark v1.8.7
	golang.org/x/net v0.57.0
)
