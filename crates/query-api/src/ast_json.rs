//! The AST of `/api/v1/parse_query` as Prometheus 3.14 writes it. The parser
//! crate serialises its own tree, which differs in a few places; this
//! rewrites its JSON into Prometheus' (tests/prometheus_api_shapes.rs
//! compares the two servers):
//! - a selector lists its metric name as the last `__name__` matcher, has
//!   `anchored` and `smoothed` flags (the parser's `extended`), `offsetExpr` (and a range selector
//!   `rangeExpr`), and an empty name is `""`;
//! - a subquery has `offsetExpr`, `rangeExpr` and `stepExpr`, and a default
//!   step is `0`;
//! - a function call's `func` has no `experimental` key;
//! - a binary expression between two vectors always has its `matching`
//!   (one-to-one, or many-to-many for `and`/`or`/`unless`), with `card` a
//!   string and the `group_left`/`group_right` labels in `include`; one with
//!   a scalar side has none.

use serde_json::{Map, Value, json};

/// Rewrites the parser crate's JSON of an expression into Prometheus'.
pub fn to_prometheus(v: &mut Value) {
    let Value::Object(node) = v else { return };
    for child in node.values_mut() {
        match child {
            Value::Object(_) => to_prometheus(child),
            Value::Array(items) => items.iter_mut().for_each(to_prometheus),
            _ => {}
        }
    }
    match node.get("type").and_then(Value::as_str) {
        Some("vectorSelector") => selector(node),
        Some("matrixSelector") => {
            selector(node);
            node.entry("rangeExpr").or_insert(Value::Null);
        }
        Some("subquery") => {
            for key in ["offsetExpr", "rangeExpr", "stepExpr"] {
                node.entry(key).or_insert(Value::Null);
            }
            if node.get("step").is_none_or(Value::is_null) {
                node.insert("step".into(), json!(0));
            }
        }
        Some("call") => {
            if let Some(Value::Object(func)) = node.get_mut("func") {
                func.remove("experimental");
            }
        }
        Some("binaryExpr") => binary(node),
        _ => {}
    }
}

fn selector(node: &mut Map<String, Value>) {
    // The parser names the modifier, if any; Prometheus has a flag for each.
    let extended = node.remove("extended");
    for key in ["anchored", "smoothed"] {
        node.insert(
            key.into(),
            Value::Bool(extended.as_ref().and_then(Value::as_str) == Some(key)),
        );
    }
    node.entry("offsetExpr").or_insert(Value::Null);
    let name = match node.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => String::new(),
    };
    node.insert("name".into(), Value::String(name.clone()));
    if name.is_empty() {
        return;
    }
    if let Some(Value::Array(matchers)) = node.get_mut("matchers")
        && !matchers.iter().any(|m| m["name"] == "__name__")
    {
        matchers.push(json!({ "name": "__name__", "type": "=", "value": name }));
    }
}

fn binary(node: &mut Map<String, Value>) {
    let vectors = ["lhs", "rhs"]
        .iter()
        .all(|side| node.get(*side).map(value_type) == Some("vector"));
    if !vectors {
        node.insert("matching".into(), Value::Null);
        return;
    }
    let set_op = matches!(node.get("op").and_then(Value::as_str), Some("and" | "or" | "unless"));
    let matching = node.entry("matching").or_insert(Value::Null);
    if matching.is_null() {
        *matching = json!({
            "card": if set_op { "many-to-many" } else { "one-to-one" },
            "fillValues": { "lhs": null, "rhs": null },
            "include": [],
            "labels": [],
            "on": false,
        });
    }
    if let Value::Object(m) = matching
        && let Some(Value::Object(card)) = m.get("card").cloned()
        && let Some((kind, include)) = card.into_iter().next()
    {
        m.insert("card".into(), Value::String(kind));
        m.insert("include".into(), include);
    }
}

/// The PromQL type an expression's JSON evaluates to.
fn value_type(v: &Value) -> &str {
    match v["type"].as_str() {
        Some("vectorSelector" | "aggregation") => "vector",
        Some("matrixSelector" | "subquery") => "matrix",
        Some("numberLiteral") => "scalar",
        Some("stringLiteral") => "string",
        Some("call") => v["func"]["returnType"].as_str().unwrap_or("vector"),
        Some("parenExpr" | "unaryExpr") => value_type(&v["expr"]),
        Some("binaryExpr") if value_type(&v["lhs"]) == "scalar" && value_type(&v["rhs"]) == "scalar" => "scalar",
        _ => "vector",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ast(query: &str) -> Value {
        let mut v = serde_json::to_value(cairn_promql::parse(query).unwrap()).unwrap();
        to_prometheus(&mut v);
        v
    }

    /// Prometheus 3.14's answers (`/api/v1/parse_query`), taken from a
    /// running server.
    #[test]
    fn selectors_subqueries_and_calls_are_written_as_prometheus_writes_them() {
        assert_eq!(
            ast("up"),
            json!({"anchored":false,"matchers":[{"name":"__name__","type":"=","value":"up"}],"name":"up","offset":0,
                   "offsetExpr":null,"smoothed":false,"startOrEnd":null,"timestamp":null,"type":"vectorSelector"})
        );
        assert_eq!(
            ast("rate(up[5m] offset 1m)"),
            json!({"args":[{"anchored":false,"matchers":[{"name":"__name__","type":"=","value":"up"}],"name":"up",
                   "offset":60000,"offsetExpr":null,"range":300000,"rangeExpr":null,"smoothed":false,"startOrEnd":null,
                   "timestamp":null,"type":"matrixSelector"}],
                   "func":{"argTypes":["matrix"],"name":"rate","returnType":"vector","variadic":0},"type":"call"})
        );
        let anchored = &ast("rate(up[5m] anchored)")["args"][0];
        assert_eq!(
            (&anchored["anchored"], &anchored["smoothed"]),
            (&json!(true), &json!(false))
        );
        assert!(anchored.get("extended").is_none());
        let smoothed = ast("up smoothed");
        assert_eq!(
            (&smoothed["anchored"], &smoothed["smoothed"]),
            (&json!(false), &json!(true))
        );
        let sub = ast("up[5m:] offset 1m");
        assert_eq!((sub["step"].clone(), sub["stepExpr"].clone()), (json!(0), Value::Null));
        let named = ast(r#"{__name__="up"}"#);
        assert_eq!(named["name"], "");
        assert_eq!(named["matchers"].as_array().unwrap().len(), 1);
        let absent = ast(r#"absent(nonexistent{job="x"})"#);
        assert_eq!(
            absent["args"][0]["matchers"],
            json!([{"name":"job","type":"=","value":"x"},{"name":"__name__","type":"=","value":"nonexistent"}])
        );
    }

    #[test]
    fn binary_matching_is_written_as_prometheus_writes_it() {
        assert_eq!(
            ast("up + up")["matching"],
            json!({"card":"one-to-one","fillValues":{"lhs":null,"rhs":null},"include":[],"labels":[],"on":false})
        );
        assert_eq!(
            ast("up + on(a) group_right(b) up")["matching"],
            json!({"card":"one-to-many","fillValues":{"lhs":null,"rhs":null},"include":["b"],"labels":["a"],"on":true})
        );
        assert_eq!(ast("up and up")["matching"]["card"], "many-to-many");
        assert_eq!(ast("count(up) > bool 2")["matching"], Value::Null);
        assert_eq!(ast("up * 2")["matching"], Value::Null);
        assert_eq!(ast("1 + 2")["matching"], Value::Null);
        assert_eq!(ast("(up) + -up")["matching"]["card"], "one-to-one");
    }
}
