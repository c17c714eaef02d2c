//! Relative paths in a configuration file are relative to the file's directory.

use std::path::{Component, Path, PathBuf};

/// Makes `path` relative to `dir` when it is relative and not empty, and
/// cleans `.` and `..` components lexically as Go's `filepath.Join` does.
pub fn join_dir(dir: &Path, path: &mut String) {
    if path.is_empty() || Path::new(path.as_str()).is_absolute() {
        return;
    }
    *path = clean(&dir.join(path.as_str())).to_string_lossy().into_owned();
}

fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal = matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(dir: &str, path: &str) -> String {
        let mut p = path.to_string();
        join_dir(Path::new(dir), &mut p);
        p
    }

    #[test]
    fn paths_join_relative_only() {
        assert_eq!(joined("/etc/prometheus", "rules/a.yml"), "/etc/prometheus/rules/a.yml");
        assert_eq!(joined("/etc/prometheus", "./rules/../b.yml"), "/etc/prometheus/b.yml");
        assert_eq!(joined("/etc/prometheus", "/abs/c.yml"), "/abs/c.yml");
        assert_eq!(joined("/etc/prometheus", ""), "");
        assert_eq!(joined(".", "x.yml"), "x.yml");
        assert_eq!(joined("conf", "../x.yml"), "x.yml");
        assert_eq!(joined("", "x.yml"), "x.yml");
    }
}
