package geminiapi

import (
	"encoding/json"
	"strings"
)

// schema is the part of an OpenAPI or JSON schema that SchemaValue reads.
// The API takes both spellings of types ("OBJECT", "object").
type schema struct {
	Type       json.RawMessage    `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	Enum       []json.RawMessage  `json:"enum"`
	AnyOf      []*schema          `json:"anyOf"`
	Minimum    *float64           `json:"minimum"`
}

// SchemaValue is a small value that follows the JSON schema raw: every
// property of an object (required or not), the first value of an enum,
// "ok" for a string, the minimum of a number, else 1 for an integer and 0
// for a number, false for a boolean, an empty list.
// The CLI's side requests get it: its model router then picks its first
// choice (the lowest complexity score), its next-speaker check
// hands the turn to the user ("user" is the first of its enum), and its
// loop detection sees no loop (confidence 0). An empty or unreadable
// schema gives an empty object.
func SchemaValue(raw json.RawMessage) any {
	var s schema
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	return s.value(0)
}

func (s *schema) value(depth int) any {
	if depth > 16 {
		return nil
	}
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0], &v) == nil {
			return v
		}
	}
	if len(s.AnyOf) > 0 && s.AnyOf[0] != nil {
		return s.AnyOf[0].value(depth + 1)
	}
	switch strings.ToLower(s.typeName()) {
	case "object", "":
		out := map[string]any{}
		for name, p := range s.Properties {
			if p != nil {
				out[name] = p.value(depth + 1)
			}
		}
		return out
	case "array":
		return []any{}
	case "string":
		return "ok"
	case "integer", "number":
		switch {
		case s.Minimum != nil:
			return *s.Minimum
		case strings.EqualFold(s.typeName(), "integer"):
			// Scores and counts: the router's complexity score is an
			// integer from 1.
			return 1
		}
		// Fractions: loop detection's confidence, 0 for none.
		return 0
	case "boolean":
		return false
	}
	return nil
}

// typeName is the schema's type, the first one that is not "null" when
// it lists several.
func (s *schema) typeName() string {
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}
