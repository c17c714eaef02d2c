//! The values a template works on: Go's types as Prometheus' templates see them.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::format::{format_float_v, format_time};

/// One element of a `query` result (Prometheus' `*template.sample`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The data of an alert template (`.Labels`, `.ExternalLabels`, `.ExternalURL`, `.Value`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertData {
    pub labels: BTreeMap<String, String>,
    pub external_labels: BTreeMap<String, String>,
    pub external_url: String,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Go's nil (an absent `map[string]any` entry, a nil pointer).
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// `html/template.HTML` from `safeHtml`.
    Html(String),
    /// `map[string]string`.
    StrMap(Rc<BTreeMap<String, String>>),
    /// `map[string]any` (what `args` returns).
    Map(Rc<BTreeMap<String, Value>>),
    /// A query result (`template.queryResult`).
    Samples(Rc<Vec<Rc<QuerySample>>>),
    Sample(Rc<QuerySample>),
    /// `*time.Time` (from `toTime`) in nanoseconds since the epoch.
    Time(i64),
    /// `*time.Duration` (from `toDuration`) in nanoseconds.
    Duration(i64),
    Alert(Rc<AlertData>),
}

impl Value {
    /// Go's type name, as error messages show it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::Html(_) => "template.HTML",
            Value::StrMap(_) => "map[string]string",
            Value::Map(_) => "map[string]interface {}",
            Value::Samples(_) => "template.queryResult",
            Value::Sample(_) => "*template.sample",
            Value::Time(_) => "*time.Time",
            Value::Duration(_) => "*time.Duration",
            Value::Alert(_) => {
                "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }"
            }
        }
    }

    /// Go's truth: the zero value and empty collections are false.
    pub fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) | Value::Html(s) => !s.is_empty(),
            Value::StrMap(m) => !m.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Samples(s) => !s.is_empty(),
            Value::Sample(_) | Value::Time(_) | Value::Duration(_) | Value::Alert(_) => true,
        }
    }

    /// `.Name` on this value (Go's field access or map lookup with `missingkey=zero`).
    pub fn field(&self, name: &str) -> Result<Value, String> {
        match self {
            Value::Alert(a) => match name {
                "Labels" => Ok(Value::StrMap(Rc::new(a.labels.clone()))),
                "ExternalLabels" => Ok(Value::StrMap(Rc::new(a.external_labels.clone()))),
                "ExternalURL" => Ok(Value::Str(a.external_url.clone())),
                "Value" => Ok(Value::Float(a.value)),
                _ => Err(self.no_field(name)),
            },
            Value::StrMap(m) => Ok(Value::Str(m.get(name).cloned().unwrap_or_default())),
            Value::Map(m) => Ok(m.get(name).cloned().unwrap_or(Value::Nil)),
            Value::Sample(s) => match name {
                "Labels" => Ok(Value::StrMap(Rc::new(s.labels.clone()))),
                "Value" => Ok(Value::Float(s.value)),
                _ => Err(self.no_field(name)),
            },
            Value::Nil => Err(format!("nil pointer evaluating interface {{}}.{name}")),
            _ => Err(self.no_field(name)),
        }
    }

    fn no_field(&self, name: &str) -> String {
        let type_name = match self {
            Value::Sample(_) => "template.sample",
            other => other.type_name(),
        };
        format!("can't evaluate field {name} in type {type_name}")
    }

    /// The text `fmt.Print` gives (what an action writes).
    pub fn print(&self) -> String {
        match self {
            Value::Nil => "<nil>".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format_float_v(*f),
            Value::Str(s) | Value::Html(s) => s.clone(),
            Value::StrMap(m) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("map[{}]", parts.join(" "))
            }
            Value::Map(m) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", v.print())).collect();
                format!("map[{}]", parts.join(" "))
            }
            Value::Samples(s) => {
                let parts: Vec<String> = s.iter().map(|s| print_sample(s)).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Sample(s) => print_sample(s),
            Value::Time(ns) => format_time(*ns),
            Value::Duration(ns) => super::format::format_go_duration(*ns),
            Value::Alert(a) => {
                let labels = Value::StrMap(Rc::new(a.labels.clone())).print();
                let ext = Value::StrMap(Rc::new(a.external_labels.clone())).print();
                format!("{{{labels} {ext} {} {}}}", a.external_url, format_float_v(a.value))
            }
        }
    }
}

fn print_sample(s: &QuerySample) -> String {
    let labels = Value::StrMap(Rc::new(s.labels.clone())).print();
    format!("&{{{labels} {}}}", format_float_v(s.value))
}
