//! S3Proxy over its file-system store: the real S3 server of the object
//! storage, backup and cluster tests. It checks every request's AWS
//! signature against one identity. `scripts/install-test-deps.sh` fetches
//! its released jar into `target/tools/` (or `CAIRN_S3PROXY_JAR` names one),
//! and Java runs it. Each test runs its own, on a port of its own, and kills
//! it however the test ends.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::peers::{require, tool};

/// The bucket every server holds from its start.
pub const BUCKET: &str = "cairn";
/// The only identity the server takes.
pub const ACCESS_KEY_ID: &str = "cairn";
pub const SECRET_ACCESS_KEY: &str = "cairn-secret";

/// A running S3Proxy (or a stopped one, whose data stays) over a directory
/// of its own.
pub struct S3Proxy {
    java: PathBuf,
    jar: PathBuf,
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for S3Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

impl S3Proxy {
    /// Starts one and waits until it answers; `None` after printing
    /// `SKIPPED` when Java or the jar is missing (outside CI).
    pub fn start() -> Option<Self> {
        let jar = tool("CAIRN_S3PROXY_JAR", "s3proxy-", "scripts/install-test-deps.sh")?;
        let java = require("java", "default-jre-headless")?;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("data").join(BUCKET)).expect("bucket dir");
        let port = super::free_port();
        // Unknown headers are let through: object_store's bulk delete sends
        // `x-amz-checksum-sha256`, which S3Proxy would otherwise refuse as
        // not implemented.
        let properties = format!(
            "s3proxy.endpoint=http://127.0.0.1:{port}\n\
             s3proxy.authorization=aws-v2-or-v4\n\
             s3proxy.identity={ACCESS_KEY_ID}\n\
             s3proxy.credential={SECRET_ACCESS_KEY}\n\
             s3proxy.ignore-unknown-headers=true\n\
             jclouds.provider=filesystem-nio2\n\
             jclouds.identity=unused\n\
             jclouds.credential=unused\n\
             jclouds.filesystem.basedir={}\n",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("s3proxy.conf"), properties).expect("s3proxy.conf");
        let mut s = Self {
            java,
            jar,
            child: None,
            port,
            dir,
        };
        s.restart();
        Some(s)
    }

    /// The S3 endpoint, `http://127.0.0.1:port`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the server (a bucket that is down); its data stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port over the same data and waits until
    /// it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "S3Proxy is running");
        let log = std::fs::File::create(self.dir.path().join("s3proxy.log")).expect("log file");
        let child = Command::new(&self.java)
            // A short-lived test server: the quick compiler only, one
            // compiler thread and the serial collector start it with the
            // least CPU.
            .args([
                "-XX:TieredStopAtLevel=1",
                "-XX:CICompilerCount=1",
                "-XX:+UseSerialGC",
                "-Xmx256m",
            ])
            .arg("-jar")
            .arg(&self.jar)
            .arg("--properties")
            .arg(self.dir.path().join("s3proxy.conf"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn java");
        self.child = Some(child);
        // Unsigned, the bucket's listing is refused with 403: any HTTP
        // answer means the server is up.
        let client = super::http_client(Duration::from_secs(2));
        let url = format!("{}/{BUCKET}/", self.endpoint());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if client.get(&url).send().is_ok() {
                return;
            }
            let child = self.child.as_mut().expect("just started");
            let exited = child.try_wait().expect("S3Proxy's status");
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "S3Proxy did not start ({exited:?}): {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("s3proxy.log")).unwrap_or_default()
    }
}
