//! An account of the operator's site, as the waiting room keeps it: a keyed
//! hash of its id, never the id itself.

use std::fmt;

/// A keyed hash of an account id (the identity token's `sub`), 8 bytes.
///
/// The origin computes it with a secret key, so the stores, entry tokens
/// and the booking database hold something that names one account of one
/// room without revealing which; 64 bits keep a collision among a room's
/// accounts below one in ten million at a million accounts.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountHash(pub [u8; 8]);

impl AccountHash {
    /// The hash as 16 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parses 16 hex digits (either case); `None` for anything else.
    pub fn from_hex(text: &str) -> Option<AccountHash> {
        if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 8];
        for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let digits = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(digits, 16).ok()?;
        }
        Some(AccountHash(out))
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 8] {
        &self.0
    }
}

impl fmt::Display for AccountHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for AccountHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccountHash({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let a = AccountHash([0, 1, 0xab, 0xcd, 0xef, 0x10, 0x7f, 0xff]);
        assert_eq!(a.to_hex(), "0001abcdef107fff");
        assert_eq!(AccountHash::from_hex("0001ABCDEF107FFF"), Some(a));
        for bad in [
            "",
            "0001abcdef107ff",
            "0001abcdef107fffa",
            "0001abcdef107ffg",
            "+001abcdef107fff",
            "é001abcdef107ff",
        ] {
            assert_eq!(AccountHash::from_hex(bad), None, "{bad}");
        }
    }
}
