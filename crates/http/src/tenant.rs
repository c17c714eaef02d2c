//! The tenant of a request: `X-Scope-OrgID` (no header: the default
//! tenant), and the storage and metadata a request of it may see.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use cairn_storage::{ReadOptions, Storage, TenantId, TenantScope};
use parking_lot::RwLock;

use crate::metadata::MetadataStore;
use crate::{ApiError, AppState};

/// The header naming a request's tenant (`a`, or `a|b` for a federated read).
pub const TENANT_HEADER: &str = "X-Scope-OrgID";

/// The tenants a request acts for, from [`TENANT_HEADER`]; a malformed
/// header is refused with 400 before the handler runs.
pub struct Tenant(pub TenantScope);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(Self(scope_of(&parts.headers)?))
    }
}

/// The tenants `headers` name in [`TENANT_HEADER`] (none: the default tenant).
pub fn scope_of(headers: &HeaderMap) -> Result<TenantScope, ApiError> {
    let header = headers.get(TENANT_HEADER).map(|v| v.to_str()).transpose();
    let header = header.map_err(|_| ApiError::bad_data(format!("{TENANT_HEADER} is not ASCII")))?;
    Ok(TenantScope::parse(header)?)
}

impl AppState {
    /// What a read by `scope` sees: its tenant's series (none if it has
    /// none), or several tenants' together.
    pub fn reader(&self, scope: &TenantScope) -> Result<Arc<dyn Storage>, ApiError> {
        Ok(self.tenants().reader(scope)?)
    }

    /// [`Self::reader`] for a read with [`ReadOptions`] (a query's `partial_response`).
    pub fn reader_with(&self, scope: &TenantScope, options: &ReadOptions) -> Result<Arc<dyn Storage>, ApiError> {
        Ok(self.tenants().reader_with(scope, options)?)
    }

    /// The storage a write or delete of `scope` changes: its one tenant's,
    /// created by its first write.
    pub fn writer(&self, scope: &TenantScope) -> Result<Arc<dyn Storage>, ApiError> {
        Ok(self.tenants().get_or_create(scope.only()?)?)
    }

    /// The metric metadata `scope`'s senders reported (several tenants':
    /// their families together).
    pub fn metadata_of(&self, scope: &TenantScope) -> Arc<MetadataStore> {
        if let Ok(only) = scope.only() {
            return self.tenant_metadata.get(only);
        }
        let merged = MetadataStore::new();
        for id in scope.tenants() {
            merged.absorb(&self.tenant_metadata.get(id));
        }
        Arc::new(merged)
    }

    /// The metadata store `tenant`'s writes record into.
    pub fn metadata_for_writes(&self, tenant: &TenantId) -> Arc<MetadataStore> {
        self.tenant_metadata.get_or_create(tenant)
    }
}

/// Each tenant's metric metadata.
#[derive(Default)]
pub struct TenantMetadata {
    stores: RwLock<BTreeMap<TenantId, Arc<MetadataStore>>>,
}

impl TenantMetadata {
    /// `tenant`'s store; an empty one (not kept) if it has none.
    fn get(&self, tenant: &TenantId) -> Arc<MetadataStore> {
        self.stores.read().get(tenant).cloned().unwrap_or_default()
    }

    fn get_or_create(&self, tenant: &TenantId) -> Arc<MetadataStore> {
        if let Some(store) = self.stores.read().get(tenant) {
            return store.clone();
        }
        self.stores.write().entry(tenant.clone()).or_default().clone()
    }
}
