//! Identity tokens as the operator's site mints them at login: an HS256
//! JWT naming one of its accounts (`sub`) for one room (`aud`), with the
//! key's `kid` in the header, checked by the origin with its
//! `--identity-keys` (docs/accounts.md). The visitors carry it in the
//! cookie `wr_identity`. Minted with the token crate's `identity` feature,
//! the origin's own JWT code.

use crate::error::Error;

/// How long a minted token lasts: longer than any run (`--max-seconds`
/// is at most an hour and the tokens are minted before it starts).
const LIFETIME_SECS: u64 = 3_600 + 300;

/// The site's HS256 key: its `kid` and secret.
pub struct IdentityKey {
    kid: String,
    secret: Vec<u8>,
}

impl IdentityKey {
    /// A key from `kid:secret`, the format of the origin's
    /// `--identity-keys` and under its rules (the secret's bytes are the
    /// HMAC key); of a list, the first entry.
    pub fn parse(spec: &str) -> Result<IdentityKey, Error> {
        let first = spec.split(',').next().unwrap_or_default().trim();
        token::IdentityKeys::parse(Some(first), None)
            .map_err(|e| Error::Config(format!("--identity-key: {e}")))?;
        let (kid, secret) = first
            .split_once(':')
            .ok_or_else(|| Error::Config("--identity-key: kid:secret".into()))?;
        Ok(IdentityKey {
            kid: kid.to_owned(),
            secret: secret.as_bytes().to_vec(),
        })
    }

    /// The key's id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// An identity token for `account` in `room`, issued at `now_secs`.
    pub fn mint(&self, account: &str, room: &str, now_secs: u64) -> Result<String, Error> {
        let claims = serde_json::json!({
            "sub": account, "aud": room, "iat": now_secs, "exp": now_secs + LIFETIME_SECS,
        });
        let jwt = token::sign_hs256(&self.kid, &self.secret, &claims);
        if jwt.is_empty() {
            return Err(Error::Config("--identity-key: cannot sign with it".into()));
        }
        Ok(jwt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use token::IdentityKeys;

    #[test]
    fn the_origin_takes_a_minted_token_for_its_room_and_account() {
        let spec = "site-1:0123456789abcdef0123";
        let key = IdentityKey::parse(spec).unwrap();
        assert_eq!(key.kid(), "site-1");
        let now = 1_900_000_000;
        let jwt = key.mint("acct-7", "concert", now).unwrap();
        let origin = IdentityKeys::parse(Some(spec), None).unwrap();
        let identity = origin.verify(&jwt, "concert", now + 10).unwrap();
        assert_eq!(identity.sub, "acct-7");
        // Another room, past its lifetime, or another secret: refused.
        assert!(origin.verify(&jwt, "other", now).is_err());
        assert!(origin.verify(&jwt, "concert", now + LIFETIME_SECS).is_err());
        let other = IdentityKeys::parse(Some("site-1:another-secret-16b"), None).unwrap();
        assert!(other.verify(&jwt, "concert", now).is_err());
    }

    #[test]
    fn a_key_follows_the_origins_rules() {
        for bad in [
            "",
            "nokid",
            ":0123456789abcdef",
            "k:short",
            "a b:0123456789abcdef",
        ] {
            assert!(IdentityKey::parse(bad).is_err(), "{bad:?}");
        }
        assert!(IdentityKey::parse("k:0123456789abcdef").is_ok());
        // Of the origin's list, the first key (the one its site signs with).
        let first = IdentityKey::parse("k2:0123456789abcdef, k1:fedcba9876543210").unwrap();
        assert_eq!(first.kid(), "k2");
    }
}
