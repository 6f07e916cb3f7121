//! Protocol versions and the two eras.

open_str! {
    /// A protocol revision string, e.g. `"2026-07-28"`. An open set: unknown strings are kept so
    /// that they can be reported in a `-32022` error.
    pub struct ProtocolVersion {
        /// 2024-11-05 (handshake era).
        const V2024_11_05 = "2024-11-05";
        /// 2025-03-26 (handshake era).
        const V2025_03_26 = "2025-03-26";
        /// 2025-06-18 (handshake era).
        const V2025_06_18 = "2025-06-18";
        /// 2025-11-25, the last revision with the `initialize` handshake.
        const V2025_11_25 = "2025-11-25";
        /// 2026-07-28: stateless, per-request `_meta`, multi-round-trip requests.
        const V2026_07_28 = "2026-07-28";
    }
}

/// The two generations of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Revisions up to 2025-11-25: an `initialize` handshake opens a session, and the server
    /// sends requests back to the client.
    Handshake,
    /// 2026-07-28 and later: no handshake; every request carries its own `_meta`, and the server
    /// asks for input by returning `InputRequiredResult`.
    Modern,
}

impl ProtocolVersion {
    /// The newest revision this SDK speaks.
    pub const LATEST: Self = Self::V2026_07_28;
    /// The newest revision reachable through the `initialize` handshake.
    pub const LATEST_HANDSHAKE: Self = Self::V2025_11_25;
    /// The stateless revisions, newest first.
    pub const MODERN: &'static [Self] = &[Self::V2026_07_28];
    /// The handshake revisions, newest first.
    pub const HANDSHAKE: &'static [Self] = &[
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The era of a known revision; `None` for unknown strings.
    pub fn era(&self) -> Option<Era> {
        Self::era_of(self.as_str())
    }

    /// The era of the known revision spelled `version`; `None` for unknown strings. For a
    /// borrowed header or field, without the `String` a [`ProtocolVersion`] owns.
    pub fn era_of(version: &str) -> Option<Era> {
        let known = |list: &[Self]| list.iter().any(|v| v.as_str() == version);
        if known(Self::MODERN) {
            Some(Era::Modern)
        } else if known(Self::HANDSHAKE) {
            Some(Era::Handshake)
        } else {
            None
        }
    }

    /// Whether this is a known stateless (2026-07-28 or later) revision.
    pub fn is_modern(&self) -> bool {
        self.era() == Some(Era::Modern)
    }

    /// Whether this is a known handshake-era revision.
    pub fn is_handshake(&self) -> bool {
        self.era() == Some(Era::Handshake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras() {
        assert_eq!(ProtocolVersion::new("2026-07-28").era(), Some(Era::Modern));
        assert_eq!(
            ProtocolVersion::new("2025-06-18").era(),
            Some(Era::Handshake)
        );
        assert_eq!(ProtocolVersion::new("1900-01-01").era(), None);
        assert_eq!(ProtocolVersion::era_of("2026-07-28"), Some(Era::Modern));
        assert_eq!(ProtocolVersion::era_of("2024-11-05"), Some(Era::Handshake));
        assert_eq!(ProtocolVersion::era_of("2025-11-25 "), None);
        assert!(!ProtocolVersion::new("v999.0.0").is_known());
    }
}
