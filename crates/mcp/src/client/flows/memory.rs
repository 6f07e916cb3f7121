//! [`MemoryFlowStore`]: flows in this process's memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::{FlowError, FlowFilter, FlowRecord, FlowStore};

/// Flows in memory: gone with the process. For tests, and for applications whose flows need
/// not outlive it. Clones share the flows.
#[derive(Debug, Clone, Default)]
pub struct MemoryFlowStore {
    flows: Arc<Mutex<HashMap<String, FlowRecord>>>,
}

impl MemoryFlowStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, work: impl FnOnce(&mut HashMap<String, FlowRecord>) -> T) -> T {
        work(&mut self.flows.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl FlowStore for MemoryFlowStore {
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        let outcome = self.with(|flows| {
            if flows.contains_key(&record.id) {
                return Err(FlowError::Exists(record.id.clone()));
            }
            flows.insert(record.id.clone(), record.clone());
            Ok(())
        });
        Box::pin(std::future::ready(outcome))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        let record = self.with(|flows| flows.get(id).cloned());
        Box::pin(std::future::ready(Ok(record)))
    }

    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        let swapped = self.with(|flows| match flows.get_mut(&record.id) {
            Some(stored) if stored.version == expected => {
                *stored = record.clone();
                true
            }
            _ => false,
        });
        Box::pin(std::future::ready(Ok(swapped)))
    }

    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>> {
        let records = self.with(|flows| {
            flows
                .values()
                .filter(|r| filter.matches(r))
                .cloned()
                .collect()
        });
        Box::pin(std::future::ready(Ok(filter.apply(records))))
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        let removed = self.with(|flows| match flows.get(id) {
            Some(stored) if expected.is_none_or(|v| v == stored.version) => {
                flows.remove(id);
                true
            }
            _ => false,
        });
        Box::pin(std::future::ready(Ok(removed)))
    }
}
