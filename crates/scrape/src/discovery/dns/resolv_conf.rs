//! `/etc/resolv.conf` as Prometheus' DNS SD reads it (through miekg/dns'
//! `ClientConfigFromFile` and `NameList`), which differs from the C library
//! and from Go's own resolver: servers are kept in file order with no limit
//! and no default, `ndots` is clamped to 0..=15, and a name with more labels
//! than `ndots` is tried as is before the search domains.

/// The parts of resolv.conf DNS SD uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvConf {
    /// `nameserver` entries as written.
    pub servers: Vec<String>,
    /// `search` (or `domain`) suffixes; the last such line wins.
    pub search: Vec<String>,
    pub ndots: u32,
    /// The servers' port: always 53 from a file; tests point it elsewhere.
    pub port: u16,
}

impl Default for ResolvConf {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            port: 53,
        }
    }
}

impl ResolvConf {
    pub fn parse(text: &str) -> Self {
        let mut conf = Self::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["nameserver", server, ..] => conf.servers.push(server.to_string()),
                ["domain", domain, ..] => conf.search = vec![domain.to_string()],
                ["domain"] => conf.search.clear(),
                ["search", domains @ ..] => conf.search = domains.iter().map(|d| d.to_string()).collect(),
                ["options", options @ ..] => {
                    for option in options {
                        if let Some(n) = option.strip_prefix("ndots:") {
                            // Go's Atoi gives 0 for what it cannot read.
                            conf.ndots = n.parse::<i64>().unwrap_or(0).clamp(0, 15) as u32;
                        }
                    }
                }
                _ => {}
            }
        }
        conf
    }

    /// The fully qualified names to try for `name`, in order.
    pub fn name_list(&self, name: &str) -> Vec<String> {
        if is_fqdn(name) {
            return vec![name.to_string()];
        }
        let has_ndots = count_labels(name) > self.ndots as usize;
        let name = format!("{name}.");
        let mut names = Vec::with_capacity(self.search.len() + 1);
        if has_ndots {
            names.push(name.clone());
        }
        for suffix in &self.search {
            names.push(fqdn(&format!("{name}{suffix}")));
        }
        if !has_ndots {
            names.push(name);
        }
        names
    }
}

/// Ends in a dot that is not escaped by a backslash.
fn is_fqdn(name: &str) -> bool {
    let Some(rest) = name.strip_suffix('.') else {
        return false;
    };
    let backslashes = rest.len() - rest.trim_end_matches('\\').len();
    backslashes % 2 == 0
}

fn fqdn(name: &str) -> String {
    if is_fqdn(name) {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

/// Labels separated by unescaped dots; the root (`.` or empty) has none.
fn count_labels(name: &str) -> usize {
    let mut labels = 0;
    let mut in_label = false;
    let mut bytes = name.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'\\' => {
                bytes.next();
                in_label = true;
            }
            b'.' => {
                labels += usize::from(in_label);
                in_label = false;
            }
            _ => in_label = true,
        }
    }
    labels + usize::from(in_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_reads_servers_search_and_ndots() {
        let conf = ResolvConf::parse(
            "# comment\nnameserver 127.0.0.53\nnameserver ::1 # trailing\nsearch a.test b.test\noptions ndots:2 timeout:1\n",
        );
        assert_eq!(conf.servers, vec!["127.0.0.53", "::1"]);
        assert_eq!(conf.search, vec!["a.test", "b.test"]);
        assert_eq!(conf.ndots, 2);
        assert_eq!(conf.port, 53);

        let conf = ResolvConf::parse("search a.test\ndomain c.test\noptions ndots:-3\n");
        assert_eq!(conf.search, vec!["c.test"]);
        assert_eq!(conf.ndots, 0);
        assert_eq!(ResolvConf::parse("options ndots:99").ndots, 15);
        assert_eq!(ResolvConf::parse("options ndots:x").ndots, 0);
        assert_eq!(ResolvConf::parse(""), ResolvConf::default());
    }

    #[test]
    fn resolv_conf_name_list_follows_ndots_and_search() {
        let conf = ResolvConf::parse("search a.test b.test.\n");
        let check = |conf: &ResolvConf, name: &str, want: &[&str]| assert_eq!(conf.name_list(name), want, "{name}");
        check(&conf, "web", &["web.a.test.", "web.b.test.", "web."]);
        check(&conf, "web.x", &["web.x.", "web.x.a.test.", "web.x.b.test."]);
        check(&conf, "_s._tcp.example.", &["_s._tcp.example."]);
        let conf = ResolvConf::parse("search a.test\noptions ndots:2\n");
        check(&conf, "web.x", &["web.x.a.test.", "web.x."]);
        check(&conf, "a.b.c", &["a.b.c.", "a.b.c.a.test."]);
        check(&ResolvConf::default(), "web", &["web."]);
    }

    #[test]
    fn resolv_conf_labels_and_fqdn_respect_escapes() {
        assert_eq!(count_labels("a.b"), 2);
        assert_eq!(count_labels("a.b."), 2);
        assert_eq!(count_labels(r"a\.b"), 1);
        assert_eq!(count_labels("."), 0);
        assert!(is_fqdn("a."));
        assert!(!is_fqdn(r"a\."));
        assert!(is_fqdn(r"a\\."));
    }
}
