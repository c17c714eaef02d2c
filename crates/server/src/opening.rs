//! Tenants' storage that exists before the TSDB has finished opening, so
//! the HTTP API can answer (503, retryable) during a long WAL replay.

use std::sync::{Arc, OnceLock};

use cairn_storage::{ReadOptions, Storage, StorageError, TenantId, Tenants};

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

    fn get_for_read(&self, tenant: &TenantId, options: &ReadOptions) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        self.opened()?.get_for_read(tenant, options)
    }

    fn list(&self) -> Vec<TenantId> {
        self.inner.get().map(|t| t.list()).unwrap_or_default()
    }

    fn snapshot(&self, name: &str, skip_head: bool) -> Result<std::path::PathBuf, StorageError> {
        self.opened()?.snapshot(name, skip_head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tenants that tell a read asking for partial answers from one that does not.
    struct PartialAware;

    impl Tenants for PartialAware {
        fn get(&self, _: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError> {
            Ok(None)
        }

        fn get_or_create(&self, _: &TenantId) -> Result<Arc<dyn Storage>, StorageError> {
            Err(StorageError::InvalidArgument("read-only".into()))
        }

        fn list(&self) -> Vec<TenantId> {
            Vec::new()
        }

        fn get_for_read(&self, _: &TenantId, options: &ReadOptions) -> Result<Option<Arc<dyn Storage>>, StorageError> {
            match options.partial_response {
                true => Err(StorageError::InvalidArgument("partial".into())),
                false => Ok(None),
            }
        }
    }

    #[test]
    fn reads_are_refused_while_opening_then_forwarded_with_their_options() {
        let tenant = TenantId::default_tenant();
        let partial = ReadOptions {
            partial_response: true,
            ..ReadOptions::default()
        };
        let opening = OpeningTenants::default();
        assert!(matches!(
            opening.get_for_read(&tenant, &partial),
            Err(StorageError::Unavailable(_))
        ));
        assert!(matches!(opening.get(&tenant), Err(StorageError::Unavailable(_))));
        opening.set(Arc::new(PartialAware));
        assert!(matches!(
            opening.get_for_read(&tenant, &partial),
            Err(StorageError::InvalidArgument(m)) if m == "partial"
        ));
        assert!(matches!(
            opening.get_for_read(&tenant, &ReadOptions::default()),
            Ok(None)
        ));
    }
}
