//! Reading a response body from a peer we do not control, with a size limit: the length is
//! checked as the chunks arrive, so a hostile or broken server cannot make us buffer more.

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The connection failed or timed out.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    /// The body is larger than the limit.
    #[error("response larger than {0} bytes")]
    TooLarge(usize),
}

/// Reads the whole body of `response`, refusing more than `limit` bytes.
pub(crate) async fn read_limited(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(BodyError::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
