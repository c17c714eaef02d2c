//! Tenants' storage that exists before the TSDB has finished opening, so
//! the HTTP API can answer (503, retryable) during a long WAL replay.

use std::sync::{Arc, OnceLock};

use cairn_storage::{Storage, StorageError, TenantId, Tenants};

#[derive(Default)]
pub struct OpeningTenants {
    inner: OnceLock<Arc<dyn Tenants>>,
}

impl OpeningTenants {
    pub fn set(&self, tenants: Arc<dyn Tenants>) {
        let _ = self.inner.set(tenants);
    }

    fn opened(&self) -> Result<&Arc<dyn Tenants>, StorageError> {
        self.inner
            .get()
            .ok_or_else(|| StorageError::Unavailable("storage is still opening (replaying its WAL)".into()))
    }
}

impl Tenants for OpeningTenants {
    fn get(&self, tenant: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        self.opened()?.get(tenant)
    }

    fn get_or_create(&self, tenant: &TenantId) -> Result<Arc<dyn Storage>, StorageError> {
        self.opened()?.get_or_create(tenant)
    }

    fn list(&self) -> Vec<TenantId> {
        self.inner.get().map(|t| t.list()).unwrap_or_default()
    }

    fn snapshot(&self, name: &str, skip_head: bool) -> Result<std::path::PathBuf, StorageError> {
        self.opened()?.snapshot(name, skip_head)
    }
}
