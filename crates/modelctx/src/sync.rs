//! Small synchronisation helpers shared across the crate.
//!
//! Every lock of the crate is taken through these: each structure guarded this way is left
//! consistent by each critical section (inserts, removals, lookups), so a panic elsewhere must not
//! make the connection unusable. clippy's `disallowed-methods` (clippy.toml) keeps
//! `PoisonError::into_inner` out of the rest of the crate.
#![allow(clippy::disallowed_methods)]

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, taking it over if a panicking holder poisoned it.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, taking it over if a panicking writer poisoned it.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, taking it over if a panicking writer poisoned it.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
