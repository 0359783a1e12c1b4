module github.com/graft-studio/graft

go 1.26
