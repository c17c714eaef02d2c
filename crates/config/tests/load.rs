use std::path::Path;

use cairn_config::{Config, Duration, ScrapeProtocol};

#[test]
fn load_minimal_config_fills_defaults() {
    let c = Config::parse(
        "scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['localhost:9100']\n",
        Path::new("/etc/prometheus"),
    )
    .unwrap();
    assert_eq!(c.global.scrape_interval, Duration::from_secs(60));
    let s = &c.scrape_configs[0];
    assert_eq!(s.scrape_interval, Duration::from_secs(60));
    assert_eq!(s.scrape_timeout, Duration::from_secs(10));
    assert_eq!(s.scrape_protocols, ScrapeProtocol::DEFAULT.to_vec());
    assert_eq!(s.service_discovery.static_configs[0].targets, ["localhost:9100"]);
}
