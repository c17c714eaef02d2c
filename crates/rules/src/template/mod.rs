//! Go's text/template, as Prometheus expands alert labels and annotations:
//! lexer (`lex`), parser (`parse`), executor (`exec`), Go's value model
//! (`value`) and `fmt` (`format`), and Prometheus' template functions (`funcs`).
//! Errors read as Go's do, so an alert shows the same
//! `<error expanding template: ...>` text as with Prometheus.

mod exec;
mod format;
mod funcs;
mod lex;
mod parse;
mod value;

use std::rc::Rc;

pub use funcs::{Context, QueryFn, query_escape};
pub use value::{AlertData, QuerySample, Value};

/// The variables Prometheus defines ahead of every alert label and annotation.
const ALERT_DEFS: &str =
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}";

/// A parsed template.
pub struct Template {
    name: String,
    text: String,
    tree: parse::Tree,
}

impl Template {
    /// Parses `text`; the error reads as Go's (`template: NAME:LINE: message`).
    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        let parse_err = |(pos, msg): (usize, String)| format!("template: {name}:{}: {msg}", line_of(text, pos));
        let tokens = lex::lex(text).map_err(parse_err)?;
        let tree = parse::parse(tokens, &funcs::is_function).map_err(parse_err)?;
        Ok(Self {
            name: name.to_string(),
            text: text.to_string(),
            tree,
        })
    }

    /// Runs the template over `data`; the error reads as Go's
    /// (`template: NAME:LINE:COL: executing "NAME" at <node>: message`).
    pub fn execute(&self, data: Value, ctx: &Context<'_>) -> Result<String, String> {
        exec::execute(&self.tree, data, ctx).map_err(|e| {
            let before = &self.text[..e.pos.min(self.text.len())];
            let col = match before.rfind('\n') {
                Some(nl) => e.pos - nl - 1,
                None => e.pos,
            };
            let context = e.context;
            format!(
                "template: {name}:{}:{col}: executing {name:?} at <{context}>: {}",
                line_of(&self.text, e.pos),
                e.message,
                name = self.name
            )
        })
    }
}

fn line_of(text: &str, pos: usize) -> usize {
    1 + text[..pos.min(text.len())].matches('\n').count()
}

/// Prometheus' `Expander.Expand`: parse and run, errors prefixed as Prometheus prefixes them.
pub fn expand(name: &str, text: &str, data: Value, ctx: &Context<'_>) -> Result<String, String> {
    let t = Template::parse(name, text).map_err(|e| format!("error parsing template {name}: {e}"))?;
    t.execute(data, ctx)
        .map_err(|e| format!("error executing template {name}: {e}"))
}

/// The load-time check of an alert's label or annotation template.
pub fn parse_alert_template(name: &str, text: &str) -> Result<(), String> {
    Template::parse(name, &format!("{ALERT_DEFS}{text}")).map(|_| ())
}

/// Expands one label or annotation value of alert `alert_name`; a failure
/// becomes Prometheus' `<error expanding template: ...>` text.
pub fn expand_alert(alert_name: &str, text: &str, data: &AlertData, ctx: &Context<'_>) -> String {
    let name = format!("__alert_{alert_name}");
    match expand(
        &name,
        &format!("{ALERT_DEFS}{text}"),
        Value::Alert(Rc::new(data.clone())),
        ctx,
    ) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(alert = alert_name, err = %e, "expanding alert template failed");
            format!("<error expanding template: {e}>")
        }
    }
}

#[cfg(test)]
mod tests;
