package service

import (
	"context"

	"github.com/graft-studio/graft/repo"
)

// CollectionInfo summarises one collection.
type CollectionInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Authority   string `json:"authority"`
	Format      string `json:"format,omitempty"`
	Language    string `json:"language,omitempty"`
	Dir         string `json:"dir,omitempty"`
	Fields      int    `json:"fields"`
	Open        bool   `json:"open"`
	Strict      bool   `json:"strict"`
}

// ListCollectionsOutput lists the project's collections in file order.
type ListCollectionsOutput struct {
	Collections []CollectionInfo `json:"collections"`
}

// ListCollections lists the collections of graft.yaml.
func (s *Service) ListCollections(_ context.Context, _ Caller) (ListCollectionsOutput, error) {
	out := ListCollectionsOutput{Collections: []CollectionInfo{}}
	for _, c := range s.Project.Config.Collections {
		out.Collections = append(out.Collections, collectionInfo(c))
	}
	return out, nil
}

func collectionInfo(c *repo.Collection) CollectionInfo {
	return CollectionInfo{Name: c.Name, Description: c.Description, Authority: authority(c), Format: c.Format,
		Language: c.Language, Dir: c.Path, Fields: len(c.Fields), Open: c.Open(), Strict: c.Strict}
}

func authority(c *repo.Collection) string {
	if c.Authority == "" {
		return "git"
	}
	return c.Authority
}

// DescribeSchemaInput optionally narrows the description to one collection.
type DescribeSchemaInput struct {
	Collection string `json:"collection,omitempty" jsonschema:"describe only this collection"`
}

// CollectionSchema is one collection with its JSON Schema (2020-12).
type CollectionSchema struct {
	CollectionInfo
	Schema map[string]any `json:"schema"`
}

// FunctionInfo describes one function of graft.yaml.
type FunctionInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Kind        string `json:"kind"`
	Collection  string `json:"collection,omitempty"`
	Access      string `json:"access"`
	RateLimit   string `json:"rateLimit,omitempty"`
	Destructive bool   `json:"destructive"`
}

// DescribeSchemaOutput is every collection as JSON Schema, plus the functions.
type DescribeSchemaOutput struct {
	Collections []CollectionSchema `json:"collections"`
	Functions   []FunctionInfo     `json:"functions"`
}

// DescribeSchema returns the collections' JSON Schemas and the functions.
func (s *Service) DescribeSchema(_ context.Context, _ Caller, in DescribeSchemaInput) (DescribeSchemaOutput, error) {
	cfg := s.Project.Config
	colls := cfg.Collections
	if in.Collection != "" {
		c, err := cfg.Collection(in.Collection)
		if err != nil {
			return DescribeSchemaOutput{}, err
		}
		colls = []*repo.Collection{c}
	}
	out := DescribeSchemaOutput{Collections: []CollectionSchema{}, Functions: []FunctionInfo{}}
	for _, c := range colls {
		out.Collections = append(out.Collections, CollectionSchema{CollectionInfo: collectionInfo(c), Schema: c.JSONSchema()})
	}
	for _, f := range cfg.Functions {
		fi := FunctionInfo{Name: f.Name, Description: f.Description, Kind: f.Kind, Collection: f.Collection,
			Access: f.Access.Kind, Destructive: f.Destructive}
		if f.Access.Kind == "scope" {
			fi.Access = "scope:" + f.Access.Scope
		}
		if f.RateLimit != nil {
			fi.RateLimit = f.RateLimit.String()
		}
		out.Functions = append(out.Functions, fi)
	}
	return out, nil
}
