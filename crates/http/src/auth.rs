//! Access control: who a request is (HTTP basic auth against bcrypt hashes,
//! or a bearer token), and whether it may do what its route does for the
//! tenants it names. Configured by `--web.config.file` in Prometheus' web
//! configuration format, plus Cairn's `bearer_tokens` and `access`
//! (docs/auth.md). Without users or tokens every request is let through,
//! as before.
//!
//! Each route says what it needs ([`Access`], in `api_routes`); the check
//! is the one middleware here, run before the handler.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use cairn_storage::{TenantId, TenantScope};
use parking_lot::Mutex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::{ApiError, AppState, ErrorType};

/// What a route does, and so what a caller needs to be let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Health and readiness: open to anyone.
    Open,
    /// The server's own status (`/metrics`, flags, build information): any
    /// authenticated caller.
    Status,
    /// Reads of the tenants `X-Scope-OrgID` names.
    Read,
    /// Writes to the tenant `X-Scope-OrgID` names.
    Write,
    /// Anything that deletes data or changes configuration.
    Admin,
}

/// `--web.config.file`: Prometheus' keys, then Cairn's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    #[serde(default)]
    pub tls_server_config: Option<TlsConfig>,
    /// User name → bcrypt hash of the password.
    #[serde(default)]
    pub basic_auth_users: BTreeMap<String, String>,
    /// Token name → sha256 of the token (hex), so the file never holds one.
    #[serde(default)]
    pub bearer_tokens: BTreeMap<String, String>,
    /// What each user or token may do; one not listed reads and writes the
    /// default tenant only.
    #[serde(default)]
    pub access: BTreeMap<String, GrantConfig>,
}

/// Prometheus' `tls_server_config`, the keys Cairn takes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// `NoClientCert` (the default) or `RequireAndVerifyClientCert`.
    #[serde(default)]
    pub client_auth_type: Option<String>,
    #[serde(default)]
    pub client_ca_file: Option<PathBuf>,
    /// `TLS12` (the default) or `TLS13`.
    #[serde(default)]
    pub min_version: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantConfig {
    /// Tenants it may read; `"*"`: all.
    #[serde(default)]
    pub read: Vec<String>,
    /// Tenants it may write; `"*"`: all.
    #[serde(default)]
    pub write: Vec<String>,
    /// Every tenant, read and write, and the admin endpoints.
    #[serde(default)]
    pub admin: bool,
}

impl WebConfig {
    /// Reads and checks the file: relative paths in it are taken from its
    /// directory, as Prometheus does.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut config: Self = serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        if let Some(tls) = &mut config.tls_server_config {
            tls.cert_file = dir.join(&tls.cert_file);
            tls.key_file = dir.join(&tls.key_file);
            tls.client_ca_file = tls.client_ca_file.as_ref().map(|p| dir.join(p));
        }
        Auth::new(&config)?;
        Ok(config)
    }
}

/// Tenants a grant covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tenants {
    All,
    Some(BTreeSet<TenantId>),
}

impl Tenants {
    fn parse(names: &[String]) -> Result<Self, String> {
        if names.iter().any(|n| n == "*") {
            return Ok(Self::All);
        }
        let ids = names.iter().map(|n| TenantId::new(n).map_err(|e| e.to_string()));
        Ok(Self::Some(ids.collect::<Result<_, _>>()?))
    }

    fn covers(&self, id: &TenantId) -> bool {
        match self {
            Self::All => true,
            Self::Some(ids) => ids.contains(id),
        }
    }
}

/// What one credential may do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Grant {
    read: Tenants,
    write: Tenants,
    admin: bool,
}

impl Grant {
    /// A credential without an `access` entry.
    fn default_tenant_only() -> Self {
        let default = Tenants::Some([TenantId::default_tenant()].into());
        Self {
            read: default.clone(),
            write: default,
            admin: false,
        }
    }

    /// Why `who` may not do `access` for `scope`, if it may not.
    fn refuses(&self, who: &str, access: Access, scope: &TenantScope) -> Option<String> {
        let refused = |what: &str, tenant: &TenantId| Some(format!("{who} may not {what} tenant {tenant}"));
        match access {
            Access::Open | Access::Status => None,
            _ if self.admin => None,
            Access::Admin => Some(format!("{who} is not an admin")),
            Access::Read => scope
                .tenants()
                .iter()
                .find(|t| !self.read.covers(t))
                .and_then(|t| refused("read", t)),
            Access::Write => scope
                .tenants()
                .iter()
                .find(|t| !self.write.covers(t))
                .and_then(|t| refused("write to", t)),
        }
    }
}

/// The cost of the decoy hash: the usual one of `htpasswd -B` and Prometheus' docs.
const DECOY_COST: u32 = 10;

/// Successful bcrypt checks remembered (bcrypt costs milliseconds by design;
/// a sender authenticates every request).
const VERIFIED_CACHE: usize = 4096;

/// The credentials and grants of a web configuration.
pub struct Auth {
    users: BTreeMap<String, String>,
    /// sha256 of a token → its name.
    tokens: BTreeMap<[u8; 32], String>,
    grants: BTreeMap<String, Grant>,
    /// sha256 of (user, password) pairs bcrypt accepted.
    verified: Mutex<HashSet<[u8; 32]>>,
    /// Checks under way: requests arriving together with one new pair (a
    /// sender's connections after a restart) wait for one check, not one each.
    checking: Mutex<HashMap<[u8; 32], Arc<OnceLock<bool>>>>,
    /// bcrypt checks at once: at most one per core, so wrong passwords sent
    /// fast queue rather than take every core from ingestion and queries.
    pub(crate) check_slots: tokio::sync::Semaphore,
    /// Checked in place of an unknown user's hash, so an unknown user takes
    /// as long to refuse as a wrong password (names cannot be probed).
    decoy: String,
}

impl Auth {
    /// `None` when the configuration has no users and no tokens: every
    /// request goes through.
    pub fn new(config: &WebConfig) -> Result<Option<Self>, String> {
        let mut tokens = BTreeMap::new();
        for (name, hex) in &config.bearer_tokens {
            let digest = decode_hex32(hex).ok_or_else(|| format!("bearer token {name}: not a sha256 in hex"))?;
            tokens.insert(digest, name.clone());
        }
        for (user, hash) in &config.basic_auth_users {
            if config.bearer_tokens.contains_key(user) {
                return Err(format!("{user} is both a user and a token name"));
            }
            hash.parse::<bcrypt::HashParts>()
                .map_err(|e| format!("user {user}: not a bcrypt hash ({e})"))?;
        }
        let mut grants = BTreeMap::new();
        for (who, g) in &config.access {
            if !config.basic_auth_users.contains_key(who) && !config.bearer_tokens.contains_key(who) {
                return Err(format!("access for {who}, who is neither a user nor a token"));
            }
            let grant = Grant {
                read: Tenants::parse(&g.read).map_err(|e| format!("access for {who}: {e}"))?,
                write: Tenants::parse(&g.write).map_err(|e| format!("access for {who}: {e}"))?,
                admin: g.admin,
            };
            grants.insert(who.clone(), grant);
        }
        if config.basic_auth_users.is_empty() && tokens.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            users: config.basic_auth_users.clone(),
            tokens,
            grants,
            verified: Mutex::default(),
            checking: Mutex::default(),
            check_slots: tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(1, |n| n.get())),
            decoy: bcrypt::hash("", DECOY_COST).map_err(|e| e.to_string())?,
        }))
    }

    /// The name of the caller whose credentials `headers` carry.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<String, ApiError> {
        match self.credentials(headers)? {
            Credentials::Known(who) => Ok(who),
            Credentials::Unchecked { user, password, key } => self.verify(user, &password, key),
        }
    }

    /// The caller, when that takes no bcrypt check (a token, or a password
    /// checked before); otherwise what the check needs.
    fn credentials(&self, headers: &HeaderMap) -> Result<Credentials, ApiError> {
        let value = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(unauthorized)?;
        let (scheme, rest) = value.split_once(' ').ok_or_else(unauthorized)?;
        if scheme.eq_ignore_ascii_case("bearer") {
            let digest: [u8; 32] = Sha256::digest(rest.trim().as_bytes()).into();
            return self
                .tokens
                .get(&digest)
                .cloned()
                .map(Credentials::Known)
                .ok_or_else(unauthorized);
        }
        if !scheme.eq_ignore_ascii_case("basic") {
            return Err(unauthorized());
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(unauthorized)?;
        let (user, password) = decoded.split_once(':').ok_or_else(unauthorized)?;
        let mut key = Sha256::new();
        key.update(user.as_bytes());
        key.update([0]);
        key.update(password.as_bytes());
        let key: [u8; 32] = key.finalize().into();
        if self.verified.lock().contains(&key) {
            return Ok(Credentials::Known(user.to_string()));
        }
        Ok(Credentials::Unchecked {
            user: user.to_string(),
            password: password.to_string(),
            key,
        })
    }

    /// The bcrypt check of a password not checked before; remembered when it passes.
    fn verify(&self, user: String, password: &str, key: [u8; 32]) -> Result<String, ApiError> {
        let (hash, known) = match self.users.get(&user) {
            Some(hash) => (hash, true),
            None => (&self.decoy, false),
        };
        let check = self.checking.lock().entry(key).or_default().clone();
        let passed = *check.get_or_init(|| bcrypt::verify(password, hash).unwrap_or(false));
        self.checking.lock().remove(&key);
        if !(passed && known) {
            return Err(unauthorized());
        }
        let mut verified = self.verified.lock();
        if verified.len() >= VERIFIED_CACHE {
            verified.clear();
        }
        verified.insert(key);
        Ok(user)
    }

    fn grant_of(&self, who: &str) -> Grant {
        self.grants.get(who).cloned().unwrap_or_else(Grant::default_tenant_only)
    }

    /// Why `who` may not do `access` for `scope`, worded for a 403.
    fn refuses(&self, who: &str, access: Access, scope: &TenantScope) -> Option<String> {
        self.grant_of(who).refuses(who, access, scope)
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(ErrorType::Unauthorized, "unauthorized: valid credentials are required")
}

/// What a request's `Authorization` header tells before any bcrypt check.
enum Credentials {
    Known(String),
    /// A user's password that bcrypt has yet to check; `key` remembers it.
    Unchecked {
        user: String,
        password: String,
        key: [u8; 32],
    },
}

fn decode_hex32(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The state of one route group's check: the app's, and what the routes do.
#[derive(Clone)]
pub struct Gate {
    pub state: AppState,
    pub access: Access,
}

/// The middleware: authenticates (401), then checks the grant for the
/// route's access and the request's tenants (403), before the handler runs.
pub async fn check(State(gate): State<Gate>, mut req: Request, next: Next) -> Response {
    let Some(auth) = gate.state.auth().cloned() else {
        return next.run(req).await;
    };
    if gate.access == Access::Open {
        return next.run(req).await;
    }
    let checked = match auth.credentials(req.headers()) {
        Ok(Credentials::Known(who)) => permit(&auth, &who, gate.access, req.headers()),
        // bcrypt is slow by design: off the async workers.
        Ok(Credentials::Unchecked { user, password, key }) => {
            let slot = auth.check_slots.acquire().await;
            let (checker, headers) = (auth.clone(), req.headers().clone());
            let checked = tokio::task::spawn_blocking(move || {
                let who = checker.verify(user, &password, key)?;
                permit(&checker, &who, gate.access, &headers)
            })
            .await
            .unwrap_or_else(|e| Err(ApiError::internal(format!("internal error: {e}"))));
            drop(slot);
            checked
        }
        Err(e) => Err(e),
    };
    let refusal = match checked {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            return next.run(req).await;
        }
        Err(e) => e,
    };
    // A client still sending its body may take an answer before the end
    // of it for a broken stream (HTTP/2 resets it): a small body is read first.
    let _ = axum::body::to_bytes(req.into_body(), DRAINED_BODY).await;
    let unauthorized = refusal.kind == ErrorType::Unauthorized;
    let mut resp = refusal.into_response();
    if unauthorized {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Basic realm=\"cairn\""),
        );
    }
    resp
}

/// The caller `who`, if it may do `access` for the tenants `headers` name.
fn permit(auth: &Auth, who: &str, access: Access, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let scope = crate::tenant::scope_of(headers)?;
    match auth.refuses(who, access, &scope) {
        Some(why) => Err(ApiError::new(ErrorType::Forbidden, format!("forbidden: {why}"))),
        None => Ok(Caller(auth.grant_of(who))),
    }
}

/// Who an authenticated request is, in its extensions, for a handler that
/// answers by caller: `/metrics` lists only the tenants the caller may read.
#[derive(Debug, Clone)]
pub struct Caller(Grant);

impl Caller {
    pub fn may_read(&self, tenant: &TenantId) -> bool {
        self.0.admin || self.0.read.covers(tenant)
    }
}

/// The most of a refused request's body read before answering.
const DRAINED_BODY: usize = 1 << 20;

/// The shared form of an [`Auth`] in the app state.
pub type SharedAuth = Option<Arc<Auth>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> WebConfig {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn basic(user: &str, password: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        h.insert(header::AUTHORIZATION, format!("Basic {token}").parse().unwrap());
        h
    }

    fn scope(s: Option<&str>) -> TenantScope {
        TenantScope::parse(s).unwrap()
    }

    #[test]
    fn users_and_tokens_are_checked_and_granted_what_their_entry_says() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        let token_hash: String = Sha256::digest(b"tok-123").iter().map(|b| format!("{b:02x}")).collect();
        let auth = Auth::new(&config(&format!(
            "basic_auth_users:\n  alice: '{hash}'\n  bob: '{hash}'\n\
             bearer_tokens:\n  agent: {token_hash}\n\
             access:\n  alice: {{admin: true}}\n  agent: {{write: [a]}}\n"
        )))
        .unwrap()
        .unwrap();
        assert_eq!(auth.authenticate(&basic("alice", "secret")).unwrap(), "alice");
        // Again, from the cache of checks.
        assert_eq!(auth.authenticate(&basic("alice", "secret")).unwrap(), "alice");
        assert_eq!(
            auth.authenticate(&basic("alice", "wrong")).unwrap_err().kind,
            ErrorType::Unauthorized
        );
        assert!(auth.authenticate(&basic("carol", "secret")).is_err());
        assert!(auth.authenticate(&HeaderMap::new()).is_err());
        let mut bearer = HeaderMap::new();
        bearer.insert(header::AUTHORIZATION, "Bearer tok-123".parse().unwrap());
        assert_eq!(auth.authenticate(&bearer).unwrap(), "agent");
        bearer.insert(header::AUTHORIZATION, "Bearer tok-124".parse().unwrap());
        assert!(auth.authenticate(&bearer).is_err());

        assert_eq!(auth.refuses("alice", Access::Admin, &scope(Some("x|y"))), None);
        assert_eq!(auth.refuses("agent", Access::Write, &scope(Some("a"))), None);
        assert!(auth.refuses("agent", Access::Write, &scope(Some("b"))).is_some());
        assert!(auth.refuses("agent", Access::Read, &scope(Some("a"))).is_some());
        // Not listed: the default tenant only, never admin.
        assert_eq!(auth.refuses("bob", Access::Read, &scope(None)), None);
        assert_eq!(auth.refuses("bob", Access::Write, &scope(None)), None);
        assert!(auth.refuses("bob", Access::Read, &scope(Some("a"))).is_some());
        assert!(auth.refuses("bob", Access::Admin, &scope(None)).is_some());
        assert_eq!(auth.refuses("bob", Access::Status, &scope(None)), None);
    }

    #[test]
    fn mistakes_in_the_file_are_named() {
        let bad = |yaml: &str| Auth::new(&config(yaml)).err().unwrap();
        assert!(bad("basic_auth_users:\n  u: plain\n").contains("bcrypt"));
        assert!(bad("bearer_tokens:\n  t: abc\n").contains("sha256"));
        assert!(bad("bearer_tokens:\n  t: '0000000000000000000000000000000000000000000000000000000000000000'\naccess:\n  x: {admin: true}\n").contains("neither"));
        let unknown = serde_yaml_ng::from_str::<WebConfig>("http_server_config:\n  http2: false\n").unwrap_err();
        assert!(unknown.to_string().contains("http_server_config"), "{unknown}");
        assert!(Auth::new(&WebConfig::default()).unwrap().is_none());
    }
}
