//! The parts of the server's application state, by type: filled when handlers are registered
//! (`UsesState::provide`), read by each call (`Context::state`). A leaf, so that the context and
//! the state's traits can both name it.

use std::any::{Any, TypeId};
use std::collections::HashMap;

/// The parts of the state the server's handlers take, by type.
#[derive(Default)]
pub struct States {
    by_type: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("States")
            .field("parts", &self.by_type.len())
            .finish()
    }
}

impl States {
    /// Keeps `part` for the handlers that take a `State<T>`.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, part: T) {
        self.by_type.insert(TypeId::of::<T>(), Box::new(part));
    }

    /// A clone of the part of type `T`, if the server has one.
    pub fn get<T: Clone + 'static>(&self) -> Option<T> {
        self.by_type
            .get(&TypeId::of::<T>())
            .and_then(|part| part.downcast_ref::<T>())
            .cloned()
    }
}
