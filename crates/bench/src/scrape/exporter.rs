//! A synthetic exporter serving a whole fleet of node_exporter-like targets
//! from one port: target `t` is the loopback address [`target_addr`]`(t)`,
//! and a scrape of it renders the fleet's values for that target at the
//! current position of the trace, in the Prometheus text format.
//!
//! Every loopback address reaches a socket bound to `0.0.0.0`, so one
//! listener serves thousands of distinct `host:port` targets, each with its
//! own keep-alive connections, as real exporters would.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::IncomingStream;

use crate::fleet::{Fleet, FleetConfig};
use crate::trace::Trace;

/// Loopback address of target `t` (`127.1.x.y`, `y` never 0 or 255).
pub fn target_addr(t: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 1, (t / 250) as u8, (t % 250 + 1) as u8)
}

/// The target served at `ip`, if it is one of [`target_addr`]'s.
pub fn target_of(ip: Ipv4Addr) -> Option<usize> {
    let [a, b, x, y] = ip.octets();
    (a == 127 && b == 1 && (1..=250).contains(&y)).then(|| x as usize * 250 + (y as usize - 1))
}

/// The local address a connection came in on.
#[derive(Clone, Copy)]
struct LocalAddr(SocketAddr);

impl axum::extract::connect_info::Connected<IncomingStream<'_, tokio::net::TcpListener>> for LocalAddr {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        let fallback = SocketAddr::from(([0, 0, 0, 0], 0));
        Self(stream.io().local_addr().unwrap_or(fallback))
    }
}

struct Served {
    fleet: Fleet,
    /// Per series, its text up to the value (`name{labels} `).
    prefixes: Vec<String>,
}

/// Starts the exporter on its own runtime thread; returns the port.
/// Serves `targets` node_exporter-like targets replaying `trace` from now
/// on, scraped every `interval`; the port, and the series each target has.
pub fn start_fleet(trace: Arc<Trace>, targets: usize, interval: std::time::Duration) -> anyhow::Result<(u16, usize)> {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let fleet = Fleet::new(
        trace,
        FleetConfig {
            targets,
            start_ms: now_ms,
            interval_ms: interval.as_millis() as i64,
            jitter_ms: 0,
            job: "node".into(),
            seed: 1,
        },
    );
    let series_per_target = fleet.series_per_target();
    Ok((start(fleet)?, series_per_target))
}

pub fn start(fleet: Fleet) -> anyhow::Result<u16> {
    let prefixes = fleet.trace().series.iter().map(|s| series_prefix(&s.labels)).collect();
    let served = Arc::new(Served { fleet, prefixes });
    let listener = std::net::TcpListener::bind("0.0.0.0:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    std::thread::Builder::new()
        .name("bench-exporter".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return eprintln!("exporter runtime: {e}"),
            };
            rt.block_on(async move {
                let app = Router::new().route("/metrics", get(metrics)).with_state(served);
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return eprintln!("exporter listener: {e}"),
                };
                if let Err(e) = axum::serve(listener, app.into_make_service_with_connect_info::<LocalAddr>()).await {
                    eprintln!("exporter: {e}");
                }
            });
        })?;
    Ok(port)
}

async fn metrics(State(served): State<Arc<Served>>, ConnectInfo(LocalAddr(addr)): ConnectInfo<LocalAddr>) -> Response {
    let t = match addr.ip() {
        IpAddr::V4(ip) => target_of(ip).filter(|&t| t < served.fleet.targets()),
        IpAddr::V6(_) => None,
    };
    let Some(t) = t else {
        return (StatusCode::NOT_FOUND, "no target at this address\n").into_response();
    };
    let cfg = served.fleet.config();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let k = ((now_ms - cfg.start_ms).max(0) / cfg.interval_ms.max(1)) as u64;
    let mut body = String::with_capacity(served.prefixes.len() * 64);
    for (s, prefix) in served.prefixes.iter().enumerate() {
        body.push_str(prefix);
        push_value(&mut body, served.fleet.value(t, s, k));
        body.push('\n');
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A series in the text format up to its value: `name{label="value",…} `.
pub fn series_prefix(labels: &cairn_model::Labels) -> String {
    let mut out = String::from(labels.metric_name().unwrap_or(""));
    let mut first = true;
    for l in labels.iter().filter(|l| l.name.as_str() != "__name__") {
        out.push(if first { '{' } else { ',' });
        first = false;
        out.push_str(l.name.as_str());
        out.push_str("=\"");
        for c in l.value.as_str().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    if !first {
        out.push('}');
    }
    out.push(' ');
    out
}

/// A value in the text format (the shortest digits that parse back to it).
pub fn push_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        out.push_str(ryu::Buffer::new().format(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_its_own_loopback_address() {
        for t in [0, 1, 249, 250, 999, 60_000] {
            assert_eq!(target_of(target_addr(t)), Some(t), "target {t}");
        }
        assert_eq!(target_of(Ipv4Addr::new(127, 0, 0, 1)), None);
        assert_eq!(target_of(Ipv4Addr::new(127, 1, 0, 0)), None);
    }

    #[test]
    fn series_text_escapes_label_values() {
        let labels = cairn_model::Labels::from_pairs([("__name__", "m"), ("a", "x\"y\\z\nw")]);
        assert_eq!(series_prefix(&labels), "m{a=\"x\\\"y\\\\z\\nw\"} ");
        assert_eq!(
            series_prefix(&cairn_model::Labels::from_pairs([("__name__", "up")])),
            "up "
        );
    }
}
