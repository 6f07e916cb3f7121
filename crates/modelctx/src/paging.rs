//! The one bound on following a listing's cursors, shared by the client and the in-process
//! calls of the server: a peer whose cursors never end (a bug, or a hostile server making the
//! caller spend memory and requests) ends the listing with an error after this many pages.

/// The most pages a listing follows.
pub const MAX_LIST_PAGES: usize = 1000;
