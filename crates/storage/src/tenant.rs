//! Tenants: each one's series in a storage of its own, so no read or
//! delete of one can reach another's data (the isolation is structural, not
//! a filter). A request names its tenant in the `X-Scope-OrgID` header (the
//! Cortex and Mimir convention); without it, it is the default tenant's,
//! which is what a single-tenant setup has always stored. A read may
//! federate several tenants (`a|b`): their series are answered together,
//! each labelled with `__tenant_id__`.

use std::fmt;
use std::sync::Arc;

use cairn_model::{Labels, Matcher};
use parking_lot::RwLock;

use crate::{
    Admin, Appendable, Appender, CardinalityQuery, MemStorage, PartInfo, Querier, Queryable, SelectHints, Series,
    SeriesSet, Storage, StorageError, StorageStats, TsdbStatus,
};

/// The tenant of requests without `X-Scope-OrgID` (Mimir's name for it).
pub const DEFAULT_TENANT: &str = "anonymous";
/// The label a federated read adds to each series: the tenant it is from.
pub const TENANT_ID_LABEL: &str = "__tenant_id__";
/// Separates the tenants of a federated read in `X-Scope-OrgID`.
pub const TENANT_SEPARATOR: char = '|';
/// Longest tenant id (Mimir's bound).
const MAX_TENANT_ID: usize = 150;

/// A tenant's id: 1 to 150 letters, digits, `-`, `_` and `.`, not `.` or
/// `..`: characters an object key and a directory name take as they are
/// (object_store escapes others, such as `*`, which would then name another key).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantId(Arc<str>);

impl TenantId {
    pub fn new(id: &str) -> Result<Self, StorageError> {
        let invalid = |why: &str| StorageError::InvalidArgument(format!("invalid tenant id {id:?}: {why}"));
        if id.is_empty() {
            return Err(invalid("it is empty"));
        }
        if id.len() > MAX_TENANT_ID {
            return Err(invalid("it is longer than 150 characters"));
        }
        if id == "." || id == ".." {
            return Err(invalid("it names a directory"));
        }
        if let Some(c) = id.chars().find(|&c| !(c.is_ascii_alphanumeric() || "-_.".contains(c))) {
            return Err(invalid(&format!("{c:?} is not a letter, a digit, -, _ or .")));
        }
        Ok(Self(id.into()))
    }

    pub fn default_tenant() -> Self {
        Self(DEFAULT_TENANT.into())
    }

    pub fn is_default(&self) -> bool {
        &*self.0 == DEFAULT_TENANT
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The tenants a request acts for: one, or for a federated read several,
/// sorted and each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantScope(Vec<TenantId>);

impl TenantScope {
    /// From the value of `X-Scope-OrgID` (`None`: the default tenant).
    pub fn parse(header: Option<&str>) -> Result<Self, StorageError> {
        let Some(header) = header else {
            return Ok(Self::single(TenantId::default_tenant()));
        };
        let mut ids = header
            .split(TENANT_SEPARATOR)
            .map(TenantId::new)
            .collect::<Result<Vec<_>, _>>()?;
        ids.sort();
        ids.dedup();
        Ok(Self(ids))
    }

    pub fn single(id: TenantId) -> Self {
        Self(vec![id])
    }

    pub fn tenants(&self) -> &[TenantId] {
        &self.0
    }

    /// The one tenant a write or a delete acts for.
    pub fn only(&self) -> Result<&TenantId, StorageError> {
        match self.0.as_slice() {
            [one] => Ok(one),
            _ => Err(StorageError::InvalidArgument(format!(
                "this request acts for one tenant, not {} (X-Scope-OrgID: {})",
                self.0.len(),
                self
            ))),
        }
    }
}

impl fmt::Display for TenantScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, "{TENANT_SEPARATOR}")?;
            }
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

/// The storages of every tenant.
pub trait Tenants: Send + Sync {
    /// `tenant`'s storage, if it has stored anything (a read never creates one).
    fn get(&self, tenant: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError>;

    /// `tenant`'s storage, created on its first write.
    fn get_or_create(&self, tenant: &TenantId) -> Result<Arc<dyn Storage>, StorageError>;

    /// Every tenant with a storage, sorted.
    fn list(&self) -> Vec<TenantId>;

    /// [`Tenants::get`] for a read that says how to answer when only part
    /// of the data can be reached (a cluster with nodes down); storage that
    /// is all in one place has no such case.
    fn get_for_read(&self, tenant: &TenantId, options: &ReadOptions) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        let _ = options;
        self.get(tenant)
    }

    /// Snapshots every tenant's data into `snapshots/<name>/` of the data
    /// directory (other tenants under its `tenants/<id>/`) and returns that
    /// directory; see [`crate::Admin::snapshot`].
    fn snapshot(&self, name: &str, skip_head: bool) -> Result<std::path::PathBuf, StorageError> {
        let _ = (name, skip_head);
        Err(StorageError::InvalidArgument(
            "snapshots are not supported by this storage (in cluster mode, snapshot each node)".into(),
        ))
    }
}

/// How a read may answer when some of the data cannot be reached.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Answer with what could be read (and say so in `warnings`) rather
    /// than fail (Thanos' and Cortex' `partial_response`).
    pub partial_response: bool,
    /// What the read should tell the caller beside its answer.
    pub warnings: ReadWarnings,
}

/// Warnings a read collects while it runs, shared by its queriers.
#[derive(Debug, Clone, Default)]
pub struct ReadWarnings(Arc<parking_lot::Mutex<Vec<String>>>);

impl ReadWarnings {
    /// Adds `warning` unless it is already there.
    pub fn push(&self, warning: String) {
        let mut w = self.0.lock();
        if !w.contains(&warning) {
            w.push(warning);
        }
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

impl dyn Tenants {
    /// What a read of `scope` sees: one tenant's storage (empty if it has
    /// none), or for several their series together ([`Federated`]). A read
    /// that gives no warnings gets the storage as [`Tenants::get`] does, so
    /// what it cannot read fails it rather than being left out unsaid.
    pub fn reader(&self, scope: &TenantScope) -> Result<Arc<dyn Storage>, StorageError> {
        self.reader_of(scope, |id| self.get(id))
    }

    /// [`Self::reader`] with a read's [`ReadOptions`].
    pub fn reader_with(&self, scope: &TenantScope, options: &ReadOptions) -> Result<Arc<dyn Storage>, StorageError> {
        self.reader_of(scope, |id| self.get_for_read(id, options))
    }

    fn reader_of(
        &self,
        scope: &TenantScope,
        get: impl Fn(&TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError>,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        let empty = || Arc::new(MemStorage::new()) as Arc<dyn Storage>;
        if let Ok(only) = scope.only() {
            return Ok(get(only)?.unwrap_or_else(empty));
        }
        let mut members = Vec::new();
        for id in scope.tenants() {
            members.push((id.clone(), get(id)?.unwrap_or_else(empty)));
        }
        Ok(Arc::new(Federated { members }))
    }
}

/// Tenants in memory ([`MemStorage`] each): the reference, for tests.
#[derive(Default)]
pub struct MemTenants {
    tenants: RwLock<std::collections::BTreeMap<TenantId, Arc<MemStorage>>>,
}

impl MemTenants {
    pub fn new() -> Self {
        Self::default()
    }

    /// Tenants whose default tenant holds `storage`.
    pub fn with_default(storage: MemStorage) -> Self {
        let t = Self::new();
        t.tenants.write().insert(TenantId::default_tenant(), Arc::new(storage));
        t
    }
}

impl Tenants for MemTenants {
    fn get(&self, tenant: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        Ok(self.tenants.read().get(tenant).map(|s| s.clone() as Arc<dyn Storage>))
    }

    fn get_or_create(&self, tenant: &TenantId) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(self.tenants.write().entry(tenant.clone()).or_default().clone())
    }

    fn list(&self) -> Vec<TenantId> {
        self.tenants.read().keys().cloned().collect()
    }
}

/// Several tenants read together: each series labelled with its tenant
/// ([`TENANT_ID_LABEL`]), a selector's matchers on that label choosing the
/// tenants. Reads only: writes, deletes and status act for one tenant.
pub struct Federated {
    members: Vec<(TenantId, Arc<dyn Storage>)>,
}

/// Splits off the matchers on [`TENANT_ID_LABEL`]: whether `tenant` passes
/// them, and the others.
fn for_tenant<'a>(tenant: &TenantId, matchers: &'a [Matcher]) -> Option<Vec<Matcher>> {
    let (on_tenant, rest): (Vec<&'a Matcher>, Vec<&'a Matcher>) =
        matchers.iter().partition(|m| m.name == TENANT_ID_LABEL);
    on_tenant
        .iter()
        .all(|m| m.matches(tenant.as_str()))
        .then(|| rest.into_iter().cloned().collect())
}

impl Queryable for Federated {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        let members = self
            .members
            .iter()
            .map(|(id, s)| Ok((id.clone(), s.querier(mint, maxt)?)))
            .collect::<Result<_, StorageError>>()?;
        Ok(Box::new(FederatedQuerier { members }))
    }

    fn settled_changes(&self) -> Option<u64> {
        self.members
            .iter()
            .try_fold(0u64, |sum, (_, s)| Some(sum.wrapping_add(s.settled_changes()?)))
    }
}

struct FederatedQuerier {
    members: Vec<(TenantId, Box<dyn Querier>)>,
}

impl Querier for FederatedQuerier {
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        // Adding the label can reorder series (a name sorting after it
        // decides), so the union is sorted once it is labelled.
        let mut all: Vec<Series> = Vec::new();
        for (id, q) in &self.members {
            let Some(rest) = for_tenant(id, matchers) else {
                continue;
            };
            for series in q.select(hints, &rest)? {
                let mut series = series?;
                series.labels.set(TENANT_ID_LABEL, id.as_str());
                all.push(series);
            }
        }
        all.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(Box::new(all.into_iter().map(Ok)))
    }

    fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
        let mut total = 0usize;
        for (id, q) in &self.members {
            if let Some(rest) = for_tenant(id, matchers) {
                total = total.saturating_add(q.series_upper_bound(&rest)?);
            }
        }
        Ok(total)
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let mut names = std::collections::BTreeSet::new();
        for (id, q) in &self.members {
            if let Some(rest) = for_tenant(id, matchers) {
                let theirs = q.label_names(&rest, None)?;
                if !theirs.is_empty() {
                    names.extend(theirs);
                    names.insert(TENANT_ID_LABEL.to_string());
                }
            }
        }
        Ok(names.into_iter().take(limit.unwrap_or(usize::MAX)).collect())
    }

    fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        limit: Option<usize>,
    ) -> Result<Vec<String>, StorageError> {
        let mut values = std::collections::BTreeSet::new();
        for (id, q) in &self.members {
            let Some(rest) = for_tenant(id, matchers) else {
                continue;
            };
            if name == TENANT_ID_LABEL {
                if !q.label_names(&rest, Some(1))?.is_empty() {
                    values.insert(id.to_string());
                }
            } else {
                values.extend(q.label_values(name, &rest, None)?);
            }
        }
        Ok(values.into_iter().take(limit.unwrap_or(usize::MAX)).collect())
    }
}

fn one_tenant_only(what: &str) -> StorageError {
    StorageError::InvalidArgument(format!("{what} acts for one tenant, not a federation of several"))
}

impl Appendable for Federated {
    fn appender(&self) -> Box<dyn Appender + '_> {
        Box::new(Refused)
    }
}

/// The appender of a federation: writes go to one tenant.
struct Refused;

impl Appender for Refused {
    fn append(&mut self, _: &Labels, _: &[cairn_model::Sample]) -> Result<(), StorageError> {
        Err(one_tenant_only("a write"))
    }

    fn commit(self: Box<Self>) -> Result<crate::CommitReport, StorageError> {
        Err(one_tenant_only("a write"))
    }

    fn rollback(self: Box<Self>) {}
}

impl Admin for Federated {
    fn delete_series(&self, _: &[Matcher], _: i64, _: i64) -> Result<(), StorageError> {
        Err(one_tenant_only("a delete"))
    }

    fn tsdb_status(&self, _: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        Err(one_tenant_only("the TSDB status"))
    }

    fn stats(&self) -> StorageStats {
        StorageStats::default()
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        Err(one_tenant_only("the list of parts"))
    }
}

#[cfg(test)]
mod tests {
    use cairn_model::{MatchOp, Sample};

    use super::*;
    use crate::conformance::read;

    fn write(s: &dyn Storage, labels: &[(&str, &str)], t: i64, v: f64) {
        let mut app = s.appender();
        app.append(&Labels::from_pairs(labels.iter().copied()), &[Sample::new(t, v)])
            .unwrap();
        app.commit().unwrap();
    }

    #[test]
    fn ids_are_checked_and_scopes_parsed() {
        assert!(TenantId::new("team-a_1.prod").is_ok());
        for bad in ["", ".", "..", "a/b", "a b", "ü", "a*", "a%2A", &"x".repeat(151)] {
            assert!(TenantId::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(TenantScope::parse(None).unwrap().to_string(), DEFAULT_TENANT);
        let scope = TenantScope::parse(Some("b|a|b")).unwrap();
        assert_eq!(scope.to_string(), "a|b");
        assert!(scope.only().is_err());
        assert!(TenantScope::parse(Some("a||b")).is_err());
        assert_eq!(TenantScope::parse(Some("a")).unwrap().only().unwrap().as_str(), "a");
    }

    #[test]
    fn a_read_sees_its_tenant_only_and_never_creates_one() {
        let tenants: Arc<dyn Tenants> = Arc::new(MemTenants::new());
        let (a, b) = (TenantId::new("a").unwrap(), TenantId::new("b").unwrap());
        write(&*tenants.get_or_create(&a).unwrap(), &[("__name__", "up")], 1, 1.0);
        let only_b = tenants.reader(&TenantScope::single(b.clone())).unwrap();
        assert!(read(&*only_b, &[Matcher::equal("__name__", "up")], 0, 10).is_empty());
        assert_eq!(tenants.list(), vec![a]);
    }

    #[test]
    fn a_federated_read_labels_each_series_with_its_tenant() {
        let tenants: Arc<dyn Tenants> = Arc::new(MemTenants::new());
        let ids: Vec<TenantId> = ["a", "b", "c"].iter().map(|i| TenantId::new(i).unwrap()).collect();
        for (i, id) in ids.iter().enumerate() {
            let s = tenants.get_or_create(id).unwrap();
            // A name sorting after the added label: labelling reorders.
            write(&*s, &[("__name__", "up"), ("zone", "x")], 1, i as f64);
            write(&*s, &[("__name__", "up")], 1, 10.0 + i as f64);
        }
        let scope = TenantScope::parse(Some("a|b")).unwrap();
        let fed = tenants.reader(&scope).unwrap();
        let got = read(&*fed, &[Matcher::equal("__name__", "up")], 0, 10);
        let labels: Vec<String> = got.iter().map(|(l, _)| l.to_string()).collect();
        assert_eq!(
            labels,
            [
                r#"up{__tenant_id__="a"}"#,
                r#"up{__tenant_id__="a", zone="x"}"#,
                r#"up{__tenant_id__="b"}"#,
                r#"up{__tenant_id__="b", zone="x"}"#,
            ]
        );
        let only_b = [
            Matcher::equal("__name__", "up"),
            Matcher::new(MatchOp::NotEqual, TENANT_ID_LABEL, "a").unwrap(),
        ];
        assert_eq!(read(&*fed, &only_b, 0, 10).len(), 2);
        let q = fed.querier(0, 10).unwrap();
        assert_eq!(q.label_values(TENANT_ID_LABEL, &[], None).unwrap(), ["a", "b"]);
        assert!(q.label_names(&[], None).unwrap().contains(&TENANT_ID_LABEL.to_string()));
        assert!(fed.delete_series(&[Matcher::equal("__name__", "up")], 0, 10).is_err());
        let mut app = fed.appender();
        assert!(
            app.append(&Labels::from_pairs([("__name__", "x")]), &[Sample::new(1, 1.0)])
                .is_err()
        );
    }
}
