//! The one place the CLI takes a lock.

#![allow(clippy::disallowed_methods)]

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it over if a panicking holder poisoned it: the CLI's locks guard display
/// and sign-in state that every critical section leaves consistent, so a panic on another thread
/// must not take the command down with it. clippy's `disallowed-methods` (clippy.toml) keeps
/// `PoisonError::into_inner` out of the rest of the crate.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
