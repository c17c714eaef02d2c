//! Which exposition format a scrape asks for and gets: the scrape config's
//! protocol names, the `Accept` header built from them, and the choice of
//! parser from the answer's `Content-Type`.

/// An exposition format, as `scrape_protocols` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScrapeFormat {
    PrometheusText0_0_4,
    PrometheusText1_0_0,
    OpenMetricsText0_0_1,
    OpenMetricsText1_0_0,
    PrometheusProto,
}

/// Every format, for validation messages and round trips.
const ALL: [ScrapeFormat; 5] = [
    ScrapeFormat::PrometheusProto,
    ScrapeFormat::PrometheusText0_0_4,
    ScrapeFormat::PrometheusText1_0_0,
    ScrapeFormat::OpenMetricsText0_0_1,
    ScrapeFormat::OpenMetricsText1_0_0,
];

/// The escaping scheme Prometheus 3 asks for when names may be UTF-8.
pub const DEFAULT_ESCAPING_SCHEME: &str = "allow-utf-8";

impl ScrapeFormat {
    /// Every format.
    pub fn all() -> [Self; 5] {
        ALL
    }

    /// Prometheus' default `scrape_protocols`, in order of preference.
    pub fn defaults() -> [Self; 4] {
        [
            Self::OpenMetricsText1_0_0,
            Self::OpenMetricsText0_0_1,
            Self::PrometheusText1_0_0,
            Self::PrometheusText0_0_4,
        ]
    }

    /// The order Prometheus prefers when native histograms are scraped:
    /// protobuf first.
    pub fn proto_first_defaults() -> [Self; 5] {
        [
            Self::PrometheusProto,
            Self::OpenMetricsText1_0_0,
            Self::OpenMetricsText0_0_1,
            Self::PrometheusText1_0_0,
            Self::PrometheusText0_0_4,
        ]
    }

    /// The name used in `scrape_protocols` and `fallback_scrape_protocol`.
    pub fn config_name(self) -> &'static str {
        match self {
            Self::PrometheusProto => "PrometheusProto",
            Self::PrometheusText0_0_4 => "PrometheusText0.0.4",
            Self::PrometheusText1_0_0 => "PrometheusText1.0.0",
            Self::OpenMetricsText0_0_1 => "OpenMetricsText0.0.1",
            Self::OpenMetricsText1_0_0 => "OpenMetricsText1.0.0",
        }
    }

    /// The format a config names (exact spelling, as Prometheus requires).
    pub fn from_config_name(s: &str) -> Option<Self> {
        ALL.into_iter().find(|f| f.config_name() == s)
    }

    /// The media type with parameters that asks for this format.
    pub fn header_value(self) -> &'static str {
        match self {
            Self::PrometheusProto => {
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
            }
            Self::PrometheusText0_0_4 => "text/plain;version=0.0.4",
            Self::PrometheusText1_0_0 => "text/plain;version=1.0.0",
            Self::OpenMetricsText0_0_1 => "application/openmetrics-text;version=0.0.1",
            Self::OpenMetricsText1_0_0 => "application/openmetrics-text;version=1.0.0",
        }
    }

    /// The bare media type (`text/plain`, ...).
    pub fn media_type(self) -> &'static str {
        match self {
            Self::PrometheusProto => "application/vnd.google.protobuf",
            Self::PrometheusText0_0_4 | Self::PrometheusText1_0_0 => "text/plain",
            Self::OpenMetricsText0_0_1 | Self::OpenMetricsText1_0_0 => "application/openmetrics-text",
        }
    }

    /// The parser for an answer's `Content-Type`, decided as Prometheus
    /// does: by media type alone (case-insensitive), the version parameter
    /// only telling the two versions of a text format apart. `None` for a
    /// blank, malformed or unsupported type; the scraper then uses the
    /// `fallback_scrape_protocol` or fails the scrape.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        Self::classify(ct).ok()
    }

    fn classify(ct: &str) -> Result<Self, ContentTypeProblem> {
        let Some((media, params)) = parse_media_type(ct) else {
            return Err(ContentTypeProblem::Malformed);
        };
        let version = params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("version"))
            .map(|(_, v)| v.as_str());
        match media.as_str() {
            "text/plain" => Ok(if version == Some("1.0.0") {
                Self::PrometheusText1_0_0
            } else {
                Self::PrometheusText0_0_4
            }),
            "application/openmetrics-text" => Ok(if version == Some("0.0.1") {
                Self::OpenMetricsText0_0_1
            } else {
                Self::OpenMetricsText1_0_0
            }),
            "application/vnd.google.protobuf" => Ok(Self::PrometheusProto),
            _ => Err(ContentTypeProblem::Unsupported),
        }
    }

    /// The format to parse an answer in, as Prometheus decides it from the
    /// `Content-Type` and the scrape config's `fallback_scrape_protocol`:
    /// the named format; else the fallback, with a warning to log; else an
    /// error that fails the scrape. Messages are worded as Prometheus'.
    pub fn for_response(content_type: &str, fallback: Option<Self>) -> Result<(Self, Option<String>), String> {
        let problem = match Self::classify(content_type) {
            Ok(f) => return Ok((f, None)),
            Err(_) if content_type.is_empty() => match fallback {
                None => {
                    return Err("non-compliant scrape target sending blank Content-Type and no \
                                fallback_scrape_protocol specified for target"
                        .to_string());
                }
                Some(f) => format!(
                    "non-compliant scrape target sending blank Content-Type, using fallback_scrape_protocol {:?}",
                    f.media_type()
                ),
            },
            Err(ContentTypeProblem::Malformed) => match fallback {
                None => {
                    return Err(format!(
                        "cannot parse Content-Type {content_type:?} and no fallback_scrape_protocol for target"
                    ));
                }
                Some(f) => format!(
                    "could not parse received Content-Type {content_type:?}, using fallback_scrape_protocol {:?}",
                    f.media_type()
                ),
            },
            Err(ContentTypeProblem::Unsupported) => match fallback {
                None => {
                    return Err(format!(
                        "received unsupported Content-Type {content_type:?} and no fallback_scrape_protocol \
                         specified for target"
                    ));
                }
                Some(f) => format!(
                    "received unsupported Content-Type {content_type:?}, using fallback_scrape_protocol {:?}",
                    f.media_type()
                ),
            },
        };
        match fallback {
            Some(f) => Ok((f, Some(problem))),
            None => Err(problem),
        }
    }

    /// The `Accept` header Prometheus sends for `protocols` (in order of
    /// preference), asking for UTF-8 names to be sent unescaped.
    pub fn accept_header(protocols: &[Self]) -> String {
        Self::accept_header_with_escaping(protocols, DEFAULT_ESCAPING_SCHEME)
    }

    /// [`Self::accept_header`] with another `escaping` scheme
    /// (`underscores`, `dots`, `values`, `allow-utf-8`); only the 1.0.0
    /// text formats carry it. Weights fall from `q=0.6` by one tenth per
    /// protocol, and `*/*` closes the list.
    pub fn accept_header_with_escaping(protocols: &[Self], escaping: &str) -> String {
        let mut weight = ALL.len() + 1;
        let mut out = String::with_capacity(80 * (protocols.len() + 1));
        for p in protocols {
            out.push_str(p.header_value());
            if matches!(p, Self::PrometheusText1_0_0 | Self::OpenMetricsText1_0_0) {
                out.push_str(";escaping=");
                out.push_str(escaping);
            }
            out.push_str(&format!(";q=0.{weight},"));
            weight = weight.saturating_sub(1);
        }
        out.push_str(&format!("*/*;q=0.{weight}"));
        out
    }
}

/// Why a `Content-Type` names no parser.
enum ContentTypeProblem {
    Malformed,
    Unsupported,
}

/// Splits a media type as Go's `mime.ParseMediaType` does, closely enough
/// to accept and refuse the same headers: a lowercased `type/subtype`, then
/// `;`-separated `key=value` parameters whose values are tokens or quoted
/// strings.
fn parse_media_type(ct: &str) -> Option<(String, Vec<(String, String)>)> {
    let mut parts = ct.split(';');
    let media = parts.next()?.trim().to_ascii_lowercase();
    let (kind, sub) = media.split_once('/')?;
    if !is_token(kind) || !is_token(sub) {
        return None;
    }
    let mut params = Vec::new();
    // Quoted values may hold `;`: walk the rest by hand.
    let mut rest = ct.get(ct.find(';').map_or(ct.len(), |i| i + 1)..)?;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let eq = rest.find('=')?;
        let key = rest.get(..eq)?.trim_end();
        if !is_token(key) {
            return None;
        }
        let after = rest.get(eq + 1..)?;
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' => value.push(chars.next()?.1),
                    c => value.push(c),
                }
            }
            (value, quoted.get(end?..)?)
        } else {
            let end = after.find(|c: char| !is_token_char(c)).unwrap_or(after.len());
            let value = after.get(..end)?;
            if value.is_empty() {
                return None;
            }
            (value.to_string(), after.get(end..)?)
        };
        params.push((key.to_ascii_lowercase(), value));
        let tail = tail.trim_start();
        if tail.is_empty() {
            break;
        }
        rest = tail.strip_prefix(';')?;
    }
    Some((media, params))
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_token_char)
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?=".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_choose_parsers_by_media_type() {
        use ScrapeFormat as F;
        for (ct, want) in [
            ("text/plain; version=0.0.4; charset=utf-8", Some(F::PrometheusText0_0_4)),
            (
                "text/plain;version=1.0.0;escaping=allow-utf-8",
                Some(F::PrometheusText1_0_0),
            ),
            ("Text/Plain", Some(F::PrometheusText0_0_4)),
            (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                Some(F::OpenMetricsText1_0_0),
            ),
            (
                "application/openmetrics-text; version=0.0.1",
                Some(F::OpenMetricsText0_0_1),
            ),
            ("application/openmetrics-text", Some(F::OpenMetricsText1_0_0)),
            (
                "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited",
                Some(F::PrometheusProto),
            ),
            ("application/vnd.google.protobuf", Some(F::PrometheusProto)),
            ("text/plain; charset=\"utf-8\"", Some(F::PrometheusText0_0_4)),
            ("", None),
            ("text/html", None),
            ("application/json", None),
            ("text/plain; version", None),
            ("text/plain;;", None),
            ("textplain", None),
        ] {
            assert_eq!(ScrapeFormat::from_content_type(ct), want, "{ct:?}");
        }
    }

    #[test]
    fn responses_fall_back_as_configured() {
        use ScrapeFormat as F;
        assert_eq!(F::for_response("text/plain", None), Ok((F::PrometheusText0_0_4, None)));
        assert!(F::for_response("", None).unwrap_err().contains("blank Content-Type"));
        assert!(
            F::for_response("text/html", None)
                .unwrap_err()
                .contains("unsupported Content-Type \"text/html\"")
        );
        assert!(
            F::for_response("text/plain; x", None)
                .unwrap_err()
                .contains("cannot parse Content-Type")
        );
        let (f, warning) = F::for_response("", Some(F::PrometheusText1_0_0)).unwrap();
        assert_eq!(f, F::PrometheusText1_0_0);
        assert!(
            warning
                .unwrap()
                .contains("using fallback_scrape_protocol \"text/plain\"")
        );
        let (f, warning) = F::for_response("application/json", Some(F::OpenMetricsText1_0_0)).unwrap();
        assert_eq!(f, F::OpenMetricsText1_0_0);
        assert!(warning.unwrap().contains("received unsupported Content-Type"));
    }

    #[test]
    fn config_names_round_trip() {
        for f in ScrapeFormat::all() {
            assert_eq!(ScrapeFormat::from_config_name(f.config_name()), Some(f));
        }
        assert_eq!(ScrapeFormat::from_config_name("prometheusproto"), None);
        assert_eq!(
            ScrapeFormat::from_config_name("OpenMetricsText1.0.0"),
            Some(ScrapeFormat::OpenMetricsText1_0_0)
        );
    }

    #[test]
    fn accept_header_is_prometheus_default() {
        assert_eq!(
            ScrapeFormat::accept_header(&ScrapeFormat::defaults()),
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
             application/openmetrics-text;version=0.0.1;q=0.5,\
             text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,\
             text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        );
        assert_eq!(
            ScrapeFormat::accept_header_with_escaping(
                &[ScrapeFormat::PrometheusProto, ScrapeFormat::PrometheusText1_0_0],
                "underscores"
            ),
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,\
             text/plain;version=1.0.0;escaping=underscores;q=0.5,*/*;q=0.4"
        );
    }
}
