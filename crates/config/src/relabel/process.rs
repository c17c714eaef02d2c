//! Applying relabelling rules to a label set.

use cairn_model::Labels;
use md5::{Digest, Md5};

use super::{LabelsBuilder, RelabelAction, RelabelConfig, expand};

/// Applies `configs` in order to `labels`. `None` means a rule dropped the
/// set. The result may be empty; callers decide whether that is a drop.
pub fn process(labels: &Labels, configs: &[RelabelConfig]) -> Option<Labels> {
    // Filtering rules (the usual metric relabelling) only read: decide them
    // on `labels` itself and build a changed set only from the first rule
    // that writes.
    let mut joined = String::new();
    for (i, config) in configs.iter().enumerate() {
        let read = |name: &str| labels.get(name).unwrap_or("");
        let keep = match config.action {
            RelabelAction::Drop => !config.regex.is_match(source_value(config, read, &mut joined)),
            RelabelAction::Keep => config.regex.is_match(source_value(config, read, &mut joined)),
            RelabelAction::DropEqual => read(&config.target_label) != source_value(config, read, &mut joined),
            RelabelAction::KeepEqual => read(&config.target_label) == source_value(config, read, &mut joined),
            _ => {
                let mut builder = LabelsBuilder::new(labels);
                return process_builder(&mut builder, &configs[i..]).then(|| builder.labels());
            }
        };
        if !keep {
            return None;
        }
    }
    Some(labels.clone())
}

/// The source labels' values joined by the separator; borrowed when there is one.
fn source_value<'a>(config: &RelabelConfig, read: impl Fn(&str) -> &'a str, joined: &'a mut String) -> &'a str {
    if let [only] = config.source_labels.as_slice() {
        return read(only);
    }
    joined.clear();
    for (i, name) in config.source_labels.iter().enumerate() {
        if i > 0 {
            joined.push_str(&config.separator);
        }
        joined.push_str(read(name));
    }
    joined
}

/// Applies `configs` in order to the labels in `builder`; false when a rule
/// dropped them (the builder is then left part-way).
pub fn process_builder(builder: &mut LabelsBuilder, configs: &[RelabelConfig]) -> bool {
    let mut scratch = String::new();
    configs.iter().all(|config| apply(config, builder, &mut scratch))
}

fn apply(config: &RelabelConfig, builder: &mut LabelsBuilder, scratch: &mut String) -> bool {
    let mut value = String::new();
    for (i, name) in config.source_labels.iter().enumerate() {
        if i > 0 {
            value.push_str(&config.separator);
        }
        value.push_str(builder.get(name));
    }
    match config.action {
        RelabelAction::Drop => return !config.regex.is_match(&value),
        RelabelAction::Keep => return config.regex.is_match(&value),
        RelabelAction::DropEqual => return builder.get(&config.target_label) != value,
        RelabelAction::KeepEqual => return builder.get(&config.target_label) == value,
        RelabelAction::Replace => replace(config, builder, &value, scratch),
        RelabelAction::Lowercase => builder.set(&config.target_label, &go_lowercase(&value)),
        RelabelAction::Uppercase => builder.set(&config.target_label, &go_uppercase(&value)),
        RelabelAction::HashMod => {
            let modulus = config.modulus.max(1);
            builder.set(&config.target_label, &(hash_of(&value) % modulus).to_string());
        }
        RelabelAction::LabelMap => {
            for label in builder.snapshot() {
                if let Some(captures) = config.regex.regex().captures(&label.name) {
                    scratch.clear();
                    expand(scratch, &config.replacement, &captures);
                    if !scratch.is_empty() {
                        builder.set(scratch, &label.value);
                    }
                }
            }
        }
        RelabelAction::LabelDrop => {
            for label in builder.snapshot() {
                if config.regex.is_match(&label.name) {
                    builder.delete(&label.name);
                }
            }
        }
        RelabelAction::LabelKeep => {
            for label in builder.snapshot() {
                if !config.regex.is_match(&label.name) {
                    builder.delete(&label.name);
                }
            }
        }
    }
    true
}

fn replace(config: &RelabelConfig, builder: &mut LabelsBuilder, value: &str, scratch: &mut String) {
    // Nothing to match against and nothing to expand: the replacement is literal.
    if value.is_empty()
        && config.regex.is_default()
        && !config.target_label.contains('$')
        && !config.replacement.contains('$')
    {
        builder.set(&config.target_label, &config.replacement);
        return;
    }
    let Some(captures) = config.regex.regex().captures(value) else {
        return;
    };
    scratch.clear();
    expand(scratch, &config.target_label, &captures);
    if !config.name_validation.is_valid_label_name(scratch) {
        return;
    }
    let target = std::mem::take(scratch);
    expand(scratch, &config.replacement, &captures);
    // An empty replacement removes the target label.
    builder.set(&target, scratch);
    *scratch = target;
}

/// Lower case rune by rune with single-character mappings, as Go's
/// `strings.ToLower` does: no context rules (a final `Σ` becomes `σ`), and
/// `İ` becomes a plain `i`.
fn go_lowercase(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                _ if c == '\u{130}' => 'i',
                _ => c,
            }
        })
        .collect()
}

/// Upper case rune by rune as Go's `strings.ToUpper` does: characters whose
/// upper case is several characters (`ß`, ligatures) stay as they are.
fn go_uppercase(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut upper = c.to_uppercase();
            match (upper.next(), upper.next()) {
                (Some(u), None) => u,
                _ => c,
            }
        })
        .collect()
}

/// Prometheus' hashmod hash: the last 8 bytes of the MD5 digest, big-endian.
fn hash_of(value: &str) -> u64 {
    let digest = Md5::digest(value.as_bytes());
    let mut tail = [0u8; 8];
    tail.copy_from_slice(&digest[8..16]);
    u64::from_be_bytes(tail)
}
