//! Small synchronisation helpers shared across the crate.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it over if a panicking holder poisoned it: every structure guarded
/// this way is left consistent by each critical section (inserts, removals, lookups), so a
/// panic elsewhere must not make the connection unusable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
