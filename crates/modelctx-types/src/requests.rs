//! Parameters shared by many requests, and access to their `_meta`.

use crate::{Cursor, RequestMeta};

/// Access to a request's `params._meta`.
pub trait RequestParams {
    /// `_meta`, when present.
    fn meta(&self) -> Option<&RequestMeta>;
    /// `_meta`, mutable (the client stamps its envelope through this).
    fn meta_mut(&mut self) -> &mut Option<Box<RequestMeta>>;
}

macro_rules! impl_request_params {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::RequestParams for $ty {
            fn meta(&self) -> Option<&$crate::RequestMeta> {
                self.meta.as_deref()
            }
            fn meta_mut(&mut self) -> &mut Option<Box<$crate::RequestMeta>> {
                &mut self.meta
            }
        }
    )*};
}
pub(crate) use impl_request_params;

wire_struct! {
    /// Parameters that carry only `_meta` (`server/discover`; `ping` in the handshake era).
    #[derive(Default)]
    pub struct EmptyParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
    }
}

wire_struct! {
    /// Parameters of the list methods.
    #[derive(Default)]
    pub struct PaginatedRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// An opaque cursor from a previous page (an empty string is a valid cursor).
        opt "cursor" => cursor: Cursor,
    }
}

impl_request_params!(EmptyParams, PaginatedRequestParams);
