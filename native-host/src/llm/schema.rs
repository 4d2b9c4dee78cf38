//! The JSON Schema of the agent's answer — `evaluation_previous_goal`,
//! `memory`, `next_goal`, `actions` — for providers' structured output.
//!
//! The actions part is generated from the protocol's [`Action`] type
//! (`schemars`, from the same serde attributes the parser reads), limited
//! to the names the model may use ([`crate::answer::parse::ACTION_NAMES`]); nothing
//! here lists an action's fields by hand. One schema, three flavours:
//!
//! - [`Flavour::OpenAiStrict`]: OpenAI's strict `json_schema` subset: every
//!   object closed (`additionalProperties: false`) with every property
//!   required, optional ones nullable (the parser reads a `null` parameter as
//!   absent); no `format`, `default`, bounds.
//! - [`Flavour::JsonSchema`]: plain JSON Schema, optional properties left
//!   out of `required` (Anthropic's tool `input_schema`).
//! - [`Flavour::Gemini`]: Gemini's `responseSchema` (an OpenAPI subset):
//!   upper-case types, `nullable`, no `additionalProperties`, the answer's
//!   fields in order through `propertyOrdering`, and a parameterless action
//!   as `true` (Gemini refuses an object without properties).
//!
//! Whatever the flavour, the answer still goes through the same parser.

use std::sync::OnceLock;

use errand_protocol::Action;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::answer::parse::{ACTION_NAMES, MAX_ACTIONS_PER_STEP};

/// The answer's text fields, in the order the model should write them
/// (its reasoning before its actions).
pub const FIELDS: [&str; 4] = ["evaluation_previous_goal", "memory", "next_goal", "actions"];

/// The name of the schema (OpenAI's `json_schema.name`) and of Anthropic's
/// answer tool.
pub const NAME: &str = "errand_answer";

/// A provider's dialect of JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    OpenAiStrict,
    JsonSchema,
    Gemini,
}

/// The answer's schema. A struct rather than a map, so that its properties
/// serialize in [`FIELDS`] order (strict decoders write them in that order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerSchema {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'static str>,
    properties: Properties,
    required: [&'static str; 4],
    #[serde(rename = "additionalProperties", skip_serializing_if = "Option::is_none")]
    additional_properties: Option<bool>,
    #[serde(rename = "propertyOrdering", skip_serializing_if = "Option::is_none")]
    property_ordering: Option<[&'static str; 4]>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Properties {
    evaluation_previous_goal: Value,
    memory: Value,
    next_goal: Value,
    actions: Value,
}

impl AnswerSchema {
    /// The schema as a JSON value (key order is then the map's own).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The schema of the action at `position` in `actions` (tests).
    pub fn action_schemas(&self) -> &[Value] {
        let items = &self.properties.actions["items"];
        items["anyOf"].as_array().map(Vec::as_slice).unwrap_or_default()
    }
}

/// The answer's schema in a provider's flavour (built once).
pub fn answer(flavour: Flavour) -> &'static AnswerSchema {
    static CACHE: [OnceLock<AnswerSchema>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match flavour {
        Flavour::OpenAiStrict => 0,
        Flavour::JsonSchema => 1,
        Flavour::Gemini => 2,
    };
    CACHE[slot].get_or_init(|| build(flavour))
}

fn build(flavour: Flavour) -> AnswerSchema {
    let text = |description: &str| json!({"type": "string", "description": description});
    let mut actions = json!({
        "type": "array",
        "description": format!(
            "One to {MAX_ACTIONS_PER_STEP} actions, run in order. Each is an object whose only key \
             is the action's name."
        ),
        "items": {"anyOf": action_variants()},
    });
    let mut properties = Properties {
        evaluation_previous_goal: text("Did the last step work? Say what you see."),
        memory: text("What to remember for later steps: progress, values found, what is left."),
        next_goal: text("What this step's actions do."),
        actions: Value::Null,
    };
    match flavour {
        Flavour::JsonSchema => {
            actions["minItems"] = json!(1);
            actions["maxItems"] = json!(MAX_ACTIONS_PER_STEP);
            properties.actions = actions;
            AnswerSchema {
                kind: "object",
                description: Some("Errand's answer for one step."),
                properties,
                required: FIELDS,
                additional_properties: Some(false),
                property_ordering: None,
            }
        }
        Flavour::OpenAiStrict => {
            properties.actions = strict(actions);
            AnswerSchema {
                kind: "object",
                description: None,
                properties,
                required: FIELDS,
                additional_properties: Some(false),
                property_ordering: None,
            }
        }
        Flavour::Gemini => {
            properties.evaluation_previous_goal = gemini(properties.evaluation_previous_goal);
            properties.memory = gemini(properties.memory);
            properties.next_goal = gemini(properties.next_goal);
            properties.actions = gemini(actions);
            AnswerSchema {
                kind: "OBJECT",
                description: None,
                properties,
                required: FIELDS,
                additional_properties: None,
                property_ordering: Some(FIELDS),
            }
        }
    }
}

/// One schema per action the model may use: `{"type": "object",
/// "properties": {"click": {…parameters…}}, "required": ["click"]}`,
/// generated from [`Action`], references inlined and tidied.
fn action_variants() -> Vec<Value> {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let root = generator.into_root_schema_for::<Action>().to_value();
    let defs = root.get("$defs").cloned().unwrap_or_default();
    let root = tidy(inline(root, &defs));
    let variants = match (root.get("anyOf"), root.get("oneOf")) {
        (Some(Value::Array(v)), _) | (_, Some(Value::Array(v))) => v.clone(),
        _ => Vec::new(),
    };
    let allowed: Vec<&str> = ACTION_NAMES.split(", ").collect();
    let mut out: Vec<Value> = variants
        .into_iter()
        .filter(|v| variant_name(v).is_some_and(|n| allowed.contains(&n)))
        .map(|mut v| {
            // Every action object is closed: its name is its only key.
            v["additionalProperties"] = Value::Bool(false);
            v
        })
        .collect();
    // In the order of ACTION_NAMES (the prompt's order).
    out.sort_by_key(|v| variant_name(v).and_then(|n| allowed.iter().position(|a| *a == n)));
    out
}

/// The action name of a variant's schema (its one property).
pub fn variant_name(variant: &Value) -> Option<&str> {
    let props = variant.get("properties")?.as_object()?;
    match props.len() {
        1 => props.keys().next().map(String::as_str),
        _ => None,
    }
}

/// Replaces each `{"$ref": "#/$defs/X"}` with `X`'s schema (the action
/// types are not recursive).
fn inline(value: Value, defs: &Value) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                if let Some(def) = r.strip_prefix("#/$defs/").and_then(|name| defs.get(name)) {
                    let mut resolved = inline(def.clone(), defs);
                    // Keep what the referring schema adds (its description).
                    if let (Value::Object(out), Some(Value::String(d))) =
                        (&mut resolved, map.get("description"))
                    {
                        out.insert("description".into(), Value::String(d.clone()));
                    }
                    return resolved;
                }
            }
            Value::Object(
                map.into_iter()
                    .filter(|(k, _)| k != "$defs")
                    .map(|(k, v)| (k, inline(v, defs)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| inline(v, defs)).collect()),
        other => other,
    }
}

/// Keeps the keywords every provider takes: `type`, `properties`,
/// `required`, `items`, `anyOf` (for `oneOf` too), `enum` (for `const` and
/// unions of constants), `description`; drops `$schema`, `title`, `format`,
/// `default`, bounds.
fn tidy(value: Value) -> Value {
    let Value::Object(map) = value else {
        return match value {
            Value::Array(items) => Value::Array(items.into_iter().map(tidy).collect()),
            other => other,
        };
    };
    let mut out = Map::new();
    for (key, v) in map {
        match key.as_str() {
            "type" | "required" | "description" | "enum" | "additionalProperties" => {
                out.insert(key, v);
            }
            "const" => {
                out.insert("enum".into(), Value::Array(vec![v]));
            }
            "properties" => {
                let props = match v {
                    Value::Object(p) => p.into_iter().map(|(k, s)| (k, tidy(s))).collect(),
                    other => other,
                };
                out.insert(key, props);
            }
            "items" => {
                out.insert(key, tidy(v));
            }
            "anyOf" | "oneOf" => {
                let items: Vec<Value> = match v {
                    Value::Array(items) => items.into_iter().map(tidy).collect(),
                    _ => Vec::new(),
                };
                // A union of constants is an enum.
                let constants: Option<Vec<Value>> = items
                    .iter()
                    .map(|i| match i.get("enum") {
                        Some(Value::Array(e)) if e.len() == 1 => Some(e[0].clone()),
                        _ => None,
                    })
                    .collect();
                match constants {
                    Some(values) if !values.is_empty() => {
                        let all_strings = values.iter().all(Value::is_string);
                        if all_strings {
                            out.insert("type".into(), Value::String("string".into()));
                        }
                        out.insert("enum".into(), Value::Array(values));
                    }
                    _ => {
                        out.insert("anyOf".into(), Value::Array(items));
                    }
                }
            }
            _ => {}
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("object") && !out.contains_key("properties")
    {
        out.insert("properties".into(), Value::Object(Map::new()));
    }
    Value::Object(out)
}

/// OpenAI's strict subset: each object closed, every property required,
/// the optional ones nullable.
fn strict(value: Value) -> Value {
    match value {
        Value::Object(mut map) => {
            for key in ["minItems", "maxItems"] {
                map.remove(key);
            }
            if let Some(Value::Object(props)) = map.remove("properties") {
                let required: Vec<String> = match map.get("required") {
                    Some(Value::Array(r)) => {
                        r.iter().filter_map(Value::as_str).map(str::to_owned).collect()
                    }
                    _ => Vec::new(),
                };
                let props: Map<String, Value> = props
                    .into_iter()
                    .map(|(k, v)| {
                        let v = strict(v);
                        let v = if required.contains(&k) { v } else { nullable(v) };
                        (k, v)
                    })
                    .collect();
                let all: Vec<Value> = props.keys().cloned().map(Value::String).collect();
                map.insert("properties".into(), Value::Object(props));
                map.insert("required".into(), Value::Array(all));
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(map.into_iter().map(|(k, v)| (k, strict(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strict).collect()),
        other => other,
    }
}

/// `value` or `null`.
fn nullable(mut value: Value) -> Value {
    let Value::Object(map) = &mut value else { return value };
    if let Some(Value::Array(any)) = map.get_mut("anyOf") {
        if !any.iter().any(|s| s["type"] == "null") {
            any.push(json!({"type": "null"}));
        }
        return value;
    }
    match map.get("type").cloned() {
        Some(Value::String(t)) => {
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
            map.insert("type".into(), Value::Array(types));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    value
}

/// Gemini's `responseSchema` subset: `STRING`, `nullable: true`, no
/// `additionalProperties`; an object without properties (a parameterless
/// action) is `BOOLEAN` (the parser reads `{"go_back": true}`).
fn gemini(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let empty_object = map.get("type").and_then(Value::as_str) == Some("object")
                && map.get("properties").and_then(Value::as_object).is_some_and(Map::is_empty);
            if empty_object {
                let mut out = json!({"type": "BOOLEAN", "description": "Write true."});
                if let Some(d) = map.get("description") {
                    out["description"] = d.clone();
                }
                return out;
            }
            let mut out = Map::new();
            for (key, v) in map {
                match key.as_str() {
                    "additionalProperties" => {}
                    "type" => match v {
                        Value::String(t) => {
                            out.insert(key, Value::String(t.to_ascii_uppercase()));
                        }
                        Value::Array(types) => {
                            let mut named =
                                types.iter().filter_map(Value::as_str).filter(|t| *t != "null");
                            if let Some(t) = named.next() {
                                out.insert(key, Value::String(t.to_ascii_uppercase()));
                            }
                            if types.iter().any(|t| t == "null") {
                                out.insert("nullable".into(), Value::Bool(true));
                            }
                        }
                        _ => {}
                    },
                    "properties" => {
                        let props = match v {
                            Value::Object(p) => {
                                p.into_iter().map(|(k, s)| (k, gemini(s))).collect()
                            }
                            other => other,
                        };
                        out.insert(key, props);
                    }
                    "enum" => {
                        // Gemini's enums are strings.
                        let values: Vec<Value> = v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|x| x.is_string())
                            .cloned()
                            .collect();
                        out.insert(key, Value::Array(values));
                    }
                    _ => {
                        out.insert(key, gemini(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(gemini).collect()),
        other => other,
    }
}

/// Each action the model may use as `(name, description, parameters)`:
/// the parameters' JSON Schema (an object) and the action's doc comment,
/// generated from [`Action`] as for the answer's schema. The MCP tools
/// (`crate::tools`) are made from it, so they cannot drift from the
/// vocabulary.
pub fn action_parameters() -> Vec<(String, String, Value)> {
    action_variants()
        .into_iter()
        .filter_map(|v| {
            let name = variant_name(&v)?.to_owned();
            let mut params = v["properties"][&name].clone();
            let description = v
                .get("description")
                .or_else(|| params.get("description"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !params.is_object() {
                params = json!({});
            }
            params["type"] = json!("object");
            if params.get("properties").is_none() {
                params["properties"] = json!({});
            }
            if let Some(map) = params.as_object_mut() {
                map.remove("description");
            }
            Some((name, description, params))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(schema: &AnswerSchema) -> Vec<String> {
        schema.action_schemas().iter().filter_map(variant_name).map(str::to_owned).collect()
    }

    #[test]
    fn every_action_the_model_may_use_is_in_the_schema_and_no_other() {
        let expected: Vec<String> = ACTION_NAMES.split(", ").map(str::to_owned).collect();
        for flavour in [Flavour::OpenAiStrict, Flavour::JsonSchema, Flavour::Gemini] {
            assert_eq!(names(answer(flavour)), expected, "{flavour:?}");
        }
        assert!(!names(answer(Flavour::JsonSchema)).contains(&"send_message".to_owned()));
    }

    #[test]
    fn the_answer_fields_come_in_order_reasoning_first() {
        let text = serde_json::to_string(answer(Flavour::OpenAiStrict)).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
        assert!(at("evaluation_previous_goal") < at("memory"));
        assert!(at("memory") < at("next_goal") && at("next_goal") < at("actions"), "{text}");
        let gemini = answer(Flavour::Gemini).to_value();
        assert_eq!(gemini["propertyOrdering"], json!(FIELDS));
    }

    /// Every object in a strict schema is closed and requires all its keys.
    fn check_strict(v: &Value, path: &str) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    assert_eq!(map["additionalProperties"], false, "{path}");
                    let mut required: Vec<&str> = map["required"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_str)
                        .collect();
                    required.sort_unstable();
                    let keys: Vec<&str> = props.keys().map(String::as_str).collect();
                    assert_eq!(required, keys, "{path}");
                }
                for bad in
                    ["$ref", "$defs", "oneOf", "format", "default", "minimum", "const", "title"]
                {
                    assert!(!map.contains_key(bad), "{path} has {bad}");
                }
                for_subschemas(map, path, check_strict);
            }
            _ => panic!("{path}: not a schema"),
        }
    }

    /// Calls `check` on each schema inside a schema: property schemas,
    /// `items`, `anyOf` members.
    fn for_subschemas(map: &Map<String, Value>, path: &str, check: fn(&Value, &str)) {
        if let Some(Value::Object(props)) = map.get("properties") {
            props.iter().for_each(|(k, x)| check(x, &format!("{path}/{k}")));
        }
        if let Some(items) = map.get("items") {
            check(items, &format!("{path}/items"));
        }
        if let Some(Value::Array(any)) = map.get("anyOf") {
            any.iter().enumerate().for_each(|(i, x)| check(x, &format!("{path}/anyOf/{i}")));
        }
    }

    #[test]
    fn the_openai_schema_is_strict() {
        let v = answer(Flavour::OpenAiStrict).to_value();
        check_strict(&v, "");
        // An optional parameter is required but nullable; a required one is not.
        let click = answer(Flavour::OpenAiStrict)
            .action_schemas()
            .iter()
            .find(|s| variant_name(s) == Some("click"))
            .unwrap()
            .clone();
        let params = &click["properties"]["click"]["properties"];
        assert_eq!(params["index"]["type"], "integer");
        assert_eq!(params["button"]["type"], json!(["string", "null"]));
        assert_eq!(params["button"]["enum"], json!(["left", "middle", "right", null]));
        assert_eq!(params["modifiers"]["type"], json!(["array", "null"]));
        // The dialog answer (flattened into click) is offered too.
        assert!(params["dialog"].to_string().contains(r#""accept","dismiss""#), "{params}");
        assert_eq!(params["dialog_text"]["type"], json!(["string", "null"]), "{params}");
        let select = answer(Flavour::OpenAiStrict)
            .action_schemas()
            .iter()
            .find(|s| variant_name(s) == Some("select_option"))
            .unwrap()
            .clone();
        let options = &select["properties"]["select_option"]["properties"]["options"]["items"];
        assert_eq!(options["anyOf"].as_array().unwrap().len(), 2, "{options}");
    }

    #[test]
    fn the_plain_schema_keeps_optional_parameters_optional() {
        let schema = answer(Flavour::JsonSchema);
        let scroll = schema
            .action_schemas()
            .iter()
            .find(|s| variant_name(s) == Some("scroll"))
            .unwrap()
            .clone();
        let params = &scroll["properties"]["scroll"];
        assert_eq!(params["required"], json!(["direction"]));
        assert_eq!(
            params["properties"]["direction"]["enum"],
            json!(["up", "down", "left", "right"])
        );
        let v = schema.to_value();
        assert_eq!(v["properties"]["actions"]["minItems"], 1);
        assert_eq!(v["properties"]["actions"]["maxItems"], MAX_ACTIONS_PER_STEP);
    }

    /// Gemini: upper-case types, no closed objects, no empty objects.
    fn check_gemini(v: &Value, path: &str) {
        match v {
            Value::Object(map) => {
                assert!(!map.contains_key("additionalProperties"), "{path}");
                if let Some(t) = map.get("type") {
                    let t = t.as_str().unwrap_or_else(|| panic!("{path}: type {t}"));
                    assert_eq!(t, t.to_ascii_uppercase(), "{path}");
                    if t == "OBJECT" {
                        assert!(!map["properties"].as_object().unwrap().is_empty(), "{path}");
                    }
                }
                for_subschemas(map, path, check_gemini);
            }
            _ => panic!("{path}: not a schema"),
        }
    }

    #[test]
    fn the_gemini_schema_is_in_gemini_s_subset() {
        let schema = answer(Flavour::Gemini);
        check_gemini(&schema.to_value(), "");
        let back = schema
            .action_schemas()
            .iter()
            .find(|s| variant_name(s) == Some("go_back"))
            .unwrap()
            .clone();
        assert_eq!(back["properties"]["go_back"]["type"], "BOOLEAN");
        let scroll = schema
            .action_schemas()
            .iter()
            .find(|s| variant_name(s) == Some("scroll"))
            .unwrap()
            .clone();
        let pages = &scroll["properties"]["scroll"]["properties"]["pages"];
        assert_eq!((&pages["type"], &pages["nullable"]), (&json!("NUMBER"), &json!(true)));
    }

    #[test]
    fn answers_written_to_each_schema_are_read_by_the_parser() {
        // What a strict decoder writes (every key, nulls for the unused) and
        // what Gemini writes for a parameterless action.
        let strict = r#"{"evaluation_previous_goal": "", "memory": "", "next_goal": "go",
            "actions": [{"click": {"index": 3, "button": null, "modifiers": null}},
                        {"scroll": {"direction": "down", "index": null, "pages": null}},
                        {"wait": {"ms": null}}, {"go_back": true}, {"go_forward": {}},
                        {"done": {"text": "ok", "success": null}}]}"#;
        let a = crate::answer::parse::parse_answer(strict).unwrap();
        assert_eq!(a.actions.len(), 6);
        assert_eq!(a.actions[2], Action::Wait { ms: 1000 });
        assert_eq!(a.actions[3], Action::GoBack {});
        assert_eq!(a.actions[5], Action::Done { text: "ok".into(), success: true });
    }
}
