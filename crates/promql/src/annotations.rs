//! The warnings and infos about native histograms, worded as Prometheus
//! words them (one place for each text).

/// A warning or an info for the query's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    Warning(String),
    Info(String),
}

/// Adds `note` to `notes` unless it is there: an operator notes the same
/// thing about each pair it cannot combine, at every step.
/// A number in an annotation, as Prometheus' `%g` writes it: shortest
/// digits, an exponent below 1e-4 and from 1e6 on (`1.7959546305e+09`),
/// `NaN`, `+Inf`, `-Inf`.
pub(crate) fn go_g(v: f64) -> String {
    let mut s = String::new();
    cairn_model::go_float::push_exposition(&mut s, v);
    s
}

pub(crate) fn add_once(notes: &mut Vec<Note>, note: Note) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// Notes gathered by workers that run at once, handed to the evaluator
/// when they are done.
#[derive(Debug, Default)]
pub(crate) struct Notes(std::sync::Mutex<Vec<Note>>);

impl Notes {
    pub fn add(&self, note: Note) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !v.contains(&note) {
            v.push(note);
        }
    }

    pub fn into_inner(self) -> Vec<Note> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn mixed_floats_histograms(metric: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: encountered a mix of histograms and floats for metric name \"{metric}\""
    ))
}

pub(crate) fn mixed_exponential_custom(metric: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: vector contains a mix of histograms with exponential and custom buckets schemas for metric name \"{metric}\""
    ))
}

pub(crate) fn not_a_counter(metric: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: this native histogram metric is not a counter: \"{metric}\""
    ))
}

pub(crate) fn not_a_gauge(metric: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: this native histogram metric is not a gauge: \"{metric}\""
    ))
}

pub(crate) fn counter_reset_collision(operation: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: conflicting counter resets during histogram {operation}"
    ))
}

pub(crate) fn histograms_ignored_in_range(metric: &str) -> Note {
    Note::Info(format!(
        "PromQL info: ignored histograms in a range containing both floats and histograms for metric name \"{metric}\""
    ))
}

pub(crate) fn mixed_floats_histograms_in_aggregation() -> Note {
    Note::Warning("PromQL warning: encountered a mix of histograms and floats for aggregation".into())
}

pub(crate) fn histogram_ignored_in_aggregation(aggregation: &str) -> Note {
    Note::Info(format!("PromQL info: ignored histogram in {aggregation} aggregation"))
}

pub(crate) fn incompatible_types_in_binop(op: &str, lhs: &str, rhs: &str) -> Note {
    Note::Info(format!(
        "PromQL info: incompatible sample types encountered for binary operator \"{op}\": {lhs} {op} {rhs}"
    ))
}

pub(crate) fn incompatible_bucket_layout_in_binop(op: &str) -> Note {
    Note::Warning(format!(
        "PromQL warning: incompatible bucket layout encountered for binary operator {op}"
    ))
}

pub(crate) fn mismatched_custom_buckets(operation: &str) -> Note {
    Note::Info(format!(
        "PromQL info: mismatched custom buckets were reconciled during {operation}"
    ))
}

/// Whether combining `a` and `b` reconciles different custom bucket
/// bounds (the model adds them on the bounds they share).
pub(crate) fn custom_bounds_differ(a: &cairn_model::Histogram, b: &cairn_model::Histogram) -> bool {
    a.uses_custom_buckets() && b.uses_custom_buckets() && a.bounds() != b.bounds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_go_percent_g() {
        for (v, want) in [
            (3.0, "3"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1795954630.5, "1.7959546305e+09"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ] {
            assert_eq!(go_g(v), want, "{v:?}");
        }
    }
}
