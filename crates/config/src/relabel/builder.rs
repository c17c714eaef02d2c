//! A label set under change, for applying many relabelling rules (and a
//! scrape's target labels) without rebuilding the set after each one.

use cairn_model::{Label, Labels};

/// A base label set plus pending changes. Reads see the changes; iteration
/// visits the unchanged base labels in order, then the set labels in the
/// order they were first set, as Prometheus' `labels.Builder` does (which
/// decides who wins when `labelmap` maps two names onto one).
#[derive(Debug, Clone, Default)]
pub struct LabelsBuilder {
    base: Vec<Label>,
    added: Vec<Label>,
    deleted: Vec<String>,
}

impl LabelsBuilder {
    pub fn new(base: &Labels) -> Self {
        let mut builder = Self::default();
        builder.reset(base);
        builder
    }

    /// Starts again from `base`, keeping the allocations.
    pub fn reset(&mut self, base: &Labels) {
        self.base.clear();
        self.base.extend_from_slice(base.as_slice());
        self.added.clear();
        self.deleted.clear();
    }

    /// The current value of `name`; empty when absent.
    pub fn get(&self, name: &str) -> &str {
        if let Some(l) = self.added.iter().find(|l| l.name == name) {
            return &l.value;
        }
        if self.deleted.iter().any(|d| d == name) {
            return "";
        }
        self.base
            .binary_search_by(|l| l.name.as_str().cmp(name))
            .map(|i| self.base[i].value.as_str())
            .unwrap_or("")
    }

    /// Sets `name` to `value`; an empty value deletes the label.
    pub fn set(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            self.delete(name);
            return;
        }
        self.deleted.retain(|d| d != name);
        match self.added.iter_mut().find(|l| l.name == name) {
            Some(l) => l.value = value.into(),
            None => self.added.push(Label::new(name, value)),
        }
    }

    pub fn delete(&mut self, name: &str) {
        self.added.retain(|l| l.name != name);
        if !self.deleted.iter().any(|d| d == name) {
            self.deleted.push(name.to_string());
        }
    }

    /// The current labels in iteration order, as a snapshot that later
    /// changes do not affect.
    pub fn snapshot(&self) -> Vec<Label> {
        let unchanged = self
            .base
            .iter()
            .filter(|l| !self.deleted.iter().any(|d| *d == l.name) && !self.added.iter().any(|a| a.name == l.name));
        unchanged.chain(self.added.iter()).cloned().collect()
    }

    /// The resulting canonical label set.
    pub fn labels(&self) -> Labels {
        let mut labels = self.snapshot();
        labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        // Names are unique and values non-empty by construction, so this cannot fail.
        Labels::new(labels).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_set_delete_and_read_back() {
        let base = Labels::from_pairs([("a", "1"), ("b", "2"), ("c", "3")]);
        let mut b = LabelsBuilder::new(&base);
        b.set("b", "20");
        b.delete("c");
        b.set("d", "4");
        b.set("a", "");
        assert_eq!(b.get("a"), "");
        assert_eq!(b.get("b"), "20");
        assert_eq!(b.get("c"), "");
        assert_eq!(b.get("d"), "4");
        assert_eq!(b.labels(), Labels::from_pairs([("b", "20"), ("d", "4")]));
        b.set("c", "30");
        assert_eq!(b.labels(), Labels::from_pairs([("b", "20"), ("c", "30"), ("d", "4")]));
        b.reset(&base);
        assert_eq!(b.labels(), base);
    }

    #[test]
    fn builder_iterates_base_then_additions() {
        let base = Labels::from_pairs([("a", "1"), ("z", "26")]);
        let mut b = LabelsBuilder::new(&base);
        b.set("m", "13");
        b.set("a", "one");
        let names: Vec<_> = b.snapshot().into_iter().map(|l| l.name.to_string()).collect();
        assert_eq!(names, ["z", "m", "a"]);
    }
}
