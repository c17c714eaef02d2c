//! The monitoring work a process does when several share it: which scrape
//! targets it scrapes and which rule groups it evaluates. A single node
//! does all of it; in a cluster each piece of work belongs to one node at a
//! time, and the owners change when nodes come and go.

/// Which pieces of work are this process's. Each piece is named by a key
/// every process derives alike from the same configuration.
pub trait WorkShare: Send + Sync + std::fmt::Debug {
    /// Whether the work named by `key` is this process's now.
    fn owns(&self, key: u64) -> bool;
}

/// The key of a rule group: its name and its file's name (the directory is
/// left out, so that nodes holding the same files in different places
/// agree).
pub fn rule_group_key(file: &str, group: &str) -> u64 {
    let file_name = file.rsplit('/').next().unwrap_or(file);
    xxhash_rust::xxh3::xxh3_64(format!("{file_name}\u{0}{group}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_key_ignores_the_directory_only() {
        assert_eq!(rule_group_key("/a/rules.yml", "g"), rule_group_key("b/rules.yml", "g"));
        assert_eq!(rule_group_key("rules.yml", "g"), rule_group_key("/etc/rules.yml", "g"));
        assert_ne!(rule_group_key("rules.yml", "g"), rule_group_key("rules.yml", "h"));
        assert_ne!(rule_group_key("a.yml", "g"), rule_group_key("b.yml", "g"));
    }
}
