//! An alert as Alertmanager's API v2 takes it (`PostableAlert`).

use std::time::SystemTime;

use cairn_model::Labels;
use cairn_model::civil::format_rfc3339_millis;
use serde::ser::{SerializeMap, SerializeStruct};

/// One alert to notify: firing while `ends_at` lies in the future,
/// resolved once it has passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub labels: Labels,
    pub annotations: Labels,
    pub starts_at: SystemTime,
    /// `None`: no end announced (Alertmanager applies its resolve timeout).
    pub ends_at: Option<SystemTime>,
    pub generator_url: String,
}

impl Alert {
    pub fn name(&self) -> &str {
        self.labels.get("alertname").unwrap_or("")
    }

    /// Whether the alert has ended by `at`.
    pub fn resolved_at(&self, at: SystemTime) -> bool {
        self.ends_at.is_some_and(|end| end <= at)
    }
}

/// Labels as a JSON object (`LabelSet`).
struct LabelSet<'a>(&'a Labels);

impl serde::Serialize for LabelSet<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for l in self.0 {
            m.serialize_entry(l.name.as_str(), l.value.as_str())?;
        }
        m.end()
    }
}

impl serde::Serialize for Alert {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PostableAlert", 5)?;
        st.serialize_field("labels", &LabelSet(&self.labels))?;
        st.serialize_field("annotations", &LabelSet(&self.annotations))?;
        st.serialize_field("startsAt", &format_rfc3339_millis(self.starts_at))?;
        // An unset end goes out as Go's zero time, which Alertmanager reads as none.
        let ends = self
            .ends_at
            .map_or_else(|| "0001-01-01T00:00:00.000Z".to_string(), format_rfc3339_millis);
        st.serialize_field("endsAt", &ends)?;
        if self.generator_url.is_empty() {
            st.skip_field("generatorURL")?;
        } else {
            st.serialize_field("generatorURL", &self.generator_url)?;
        }
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn serializes_as_alertmanagers_postable_alert() {
        let alert = Alert {
            labels: Labels::from_pairs([("alertname", "HighLoad"), ("instance", "a:9100")]),
            annotations: Labels::from_pairs([("summary", "load is \"high\"")]),
            starts_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            ends_at: Some(UNIX_EPOCH + Duration::from_secs(1_700_000_300)),
            generator_url: "http://cairn:9090/graph?g0.expr=up".into(),
        };
        let json = serde_json::to_value(&alert).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "labels": {"alertname": "HighLoad", "instance": "a:9100"},
                "annotations": {"summary": "load is \"high\""},
                "startsAt": "2023-11-14T22:13:20.123Z",
                "endsAt": "2023-11-14T22:18:20.000Z",
                "generatorURL": "http://cairn:9090/graph?g0.expr=up",
            })
        );
        assert!(!alert.resolved_at(UNIX_EPOCH + Duration::from_secs(1_700_000_299)));
        assert!(alert.resolved_at(UNIX_EPOCH + Duration::from_secs(1_700_000_300)));
    }

    #[test]
    fn an_alert_without_end_or_generator_says_so_as_go_does() {
        let alert = Alert {
            labels: Labels::from_pairs([("alertname", "A")]),
            annotations: Labels::empty(),
            starts_at: UNIX_EPOCH,
            ends_at: None,
            generator_url: String::new(),
        };
        let json = serde_json::to_value(&alert).unwrap();
        assert_eq!(json["endsAt"], "0001-01-01T00:00:00.000Z");
        assert!(json.get("generatorURL").is_none());
        assert!(!alert.resolved_at(SystemTime::now()));
    }
}
