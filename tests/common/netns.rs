//! Network namespaces for partition tests: a bridge in the test's own
//! namespace, and namespaces wired to it by veth pairs, whose links the
//! test cuts and heals. Needs root (CI runs the suite as root); elsewhere
//! the tests that need it skip with a message.

use std::process::Command;

use super::peers::in_ci;

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A bridge with the address `<subnet>.1/24`, deleted on drop.
pub struct Bridge {
    name: String,
    subnet: String,
    namespaces: Vec<String>,
}

/// Bridges made by this process so far: tests running at once each get a
/// bridge, a subnet and namespaces of their own.
static BRIDGES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Bridge {
    /// A new bridge, or `None` after printing `SKIPPED` where namespaces
    /// cannot be made (not root); under CI that is a failure.
    pub fn create() -> Option<Self> {
        let pid = std::process::id();
        let k = BRIDGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = pid * 8 + k % 8;
        let subnet = format!("10.{}.{}", 20 + id % 200, (id / 200) % 250);
        let bridge = Self {
            name: format!("cbr{pid}n{k}"),
            subnet,
            namespaces: Vec::new(),
        };
        let made = ip(&["link", "add", &bridge.name, "type", "bridge"])
            .and_then(|()| ip(&["addr", "add", &format!("{}/24", bridge.gateway()), "dev", &bridge.name]))
            .and_then(|()| ip(&["link", "set", &bridge.name, "up"]));
        match made {
            Ok(()) => Some(bridge),
            Err(e) => {
                assert!(!in_ci(), "network namespaces unavailable under CI: {e}");
                println!("SKIPPED: cannot create network namespaces (needs root): {e}");
                None
            }
        }
    }

    /// The bridge's own address, in the test's namespace.
    pub fn gateway(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// Another address of the test's own namespace on the bridge,
    /// `<subnet>.<2 + index>`: a service there can be cut off from one
    /// namespace alone (see [`Namespace::block`]).
    pub fn add_address(&self, index: u8) -> String {
        let addr = format!("{}.{}", self.subnet, 2 + u32::from(index));
        ip(&["addr", "add", &format!("{addr}/24"), "dev", &self.name]).unwrap_or_else(|e| panic!("{e}"));
        addr
    }

    /// A namespace linked to the bridge, with the address `<subnet>.<10 + index>`.
    pub fn add_namespace(&mut self, index: u8) -> Namespace {
        // The bridge's own name tells its namespaces apart from another's.
        let tag = self.name.trim_start_matches("cbr");
        let name = format!("cns{tag}x{index}");
        let host_end = format!("cv{tag}x{index}");
        let ns_end = format!("cp{tag}x{index}");
        let addr = format!("{}.{}", self.subnet, 10 + u32::from(index));
        let (cidr, gateway) = (format!("{addr}/24"), self.gateway());
        let steps: [Vec<&str>; 9] = [
            vec!["netns", "add", &name],
            vec!["link", "add", &host_end, "type", "veth", "peer", "name", &ns_end],
            vec!["link", "set", &ns_end, "netns", &name],
            vec!["link", "set", &host_end, "master", &self.name],
            vec!["link", "set", &host_end, "up"],
            vec!["-n", &name, "addr", "add", &cidr, "dev", &ns_end],
            vec!["-n", &name, "link", "set", &ns_end, "up"],
            vec!["-n", &name, "link", "set", "lo", "up"],
            vec!["-n", &name, "route", "add", "default", "via", &gateway],
        ];
        for step in steps {
            ip(&step).unwrap_or_else(|e| panic!("{e}"));
        }
        self.namespaces.push(name.clone());
        Namespace { name, host_end, addr }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.name]);
    }
}

/// A namespace on the bridge.
pub struct Namespace {
    pub name: String,
    host_end: String,
    /// Its address on the bridge.
    pub addr: String,
}

impl Namespace {
    /// The command prefix that runs a program inside it.
    pub fn exec_prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// Cuts it off: nothing gets in or out until [`Self::heal`].
    pub fn cut(&self) {
        ip(&["link", "set", &self.host_end, "down"]).unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn heal(&self) {
        ip(&["link", "set", &self.host_end, "up"]).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Drops what it sends to `addr` (one address of the bridge's), until
    /// [`Self::unblock`]; everything else still gets through.
    pub fn block(&self, addr: &str) {
        let route = format!("{addr}/32");
        ip(&["-n", &self.name, "route", "add", "blackhole", &route]).unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn unblock(&self, addr: &str) {
        let route = format!("{addr}/32");
        ip(&["-n", &self.name, "route", "del", "blackhole", &route]).unwrap_or_else(|e| panic!("{e}"));
    }
}
