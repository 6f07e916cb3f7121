//! Unguessable ids: 128 bits of system randomness as 32 hex digits. Task and instance ids,
//! handshake-era session ids, `elicitationId`s and durable flow ids all come from here.

use std::fmt::Write as _;

/// 128 random bits as 32 lowercase hex digits.
///
/// # Errors
/// The system has no randomness to give. There is no fallback: an id made of the clock and a
/// counter can be guessed, and for a task or a session without a principal the id is all that
/// stands between it and anyone who guesses it.
pub(crate) fn random_hex() -> Result<String, getrandom::Error> {
    hex_from(getrandom::fill)
}

/// 16 bytes from `fill`, as hex.
fn hex_from(
    fill: impl FnOnce(&mut [u8]) -> Result<(), getrandom::Error>,
) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    fill(&mut bytes)?;
    Ok(bytes.iter().fold(String::with_capacity(32), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::{hex_from, random_hex};

    #[test]
    fn random_hex_is_128_bits_of_hex() {
        let first = random_hex().unwrap();
        assert_eq!(first.len(), 32);
        assert!(
            first
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{first}"
        );
        assert_ne!(first, random_hex().unwrap());
        let fixed = hex_from(|bytes| {
            bytes.fill(0xab);
            Ok(())
        });
        assert_eq!(fixed.unwrap(), "ab".repeat(16));
    }

    #[test]
    fn no_randomness_is_an_error() {
        assert_eq!(
            hex_from(|_| Err(getrandom::Error::UNSUPPORTED)).ok(),
            None,
            "no clock-and-counter fallback"
        );
    }
}
