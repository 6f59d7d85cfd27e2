//! Identity tokens as the operator's site mints them at login: an HS256
//! JWT naming one of its accounts (`sub`) for one room (`aud`), with the
//! key's `kid` in the header, checked by the origin with its
//! `--identity-keys` (docs/accounts.md). The visitors carry it in the
//! cookie `wr_identity`.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::error::Error;

/// How long a minted token lasts: longer than any run (`--max-seconds`
/// is at most an hour and the tokens are minted before it starts).
const LIFETIME_SECS: u64 = 3_600 + 300;

/// The site's HS256 key: its `kid` and secret.
pub struct IdentityKey {
    kid: String,
    key: EncodingKey,
}

/// The claims of one identity token.
#[derive(Serialize)]
struct Claims<'a> {
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

impl IdentityKey {
    /// A key from `kid:secret`, the format of the origin's
    /// `--identity-keys` (the secret's bytes are the HMAC key); of a list,
    /// the first entry.
    pub fn parse(spec: &str) -> Result<IdentityKey, Error> {
        let bad = |why: &str| Error::Config(format!("--identity-key: {why}"));
        let first = spec.split(',').next().unwrap_or_default().trim();
        let (kid, secret) = first.split_once(':').ok_or_else(|| bad("kid:secret"))?;
        if kid.is_empty() {
            return Err(bad("kid:secret, the kid not empty"));
        }
        if secret.len() < token::MIN_SECRET_LEN {
            return Err(bad(&format!(
                "a secret of at least {} bytes",
                token::MIN_SECRET_LEN
            )));
        }
        Ok(IdentityKey {
            kid: kid.to_owned(),
            key: EncodingKey::from_secret(secret.as_bytes()),
        })
    }

    /// The key's id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// An identity token for `account` in `room`, issued at `now_secs`.
    pub fn mint(&self, account: &str, room: &str, now_secs: u64) -> Result<String, Error> {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        let claims = Claims {
            sub: account,
            aud: room,
            iat: now_secs,
            exp: now_secs + LIFETIME_SECS,
        };
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| Error::Config(format!("minting an identity token: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    #[derive(serde::Deserialize)]
    struct Read {
        sub: String,
        aud: String,
        iat: u64,
        exp: u64,
    }

    #[test]
    fn a_minted_token_verifies_with_the_same_secret_and_names_its_key() {
        let secret = "0123456789abcdef0123";
        let key = IdentityKey::parse(&format!("site-1:{secret}")).unwrap();
        assert_eq!(key.kid(), "site-1");
        let now = jsonwebtoken::get_current_timestamp();
        let jwt = key.mint("acct-7", "concert", now).unwrap();
        let header = jsonwebtoken::decode_header(&jwt).unwrap();
        assert_eq!(header.alg, Algorithm::HS256);
        assert_eq!(header.kid.as_deref(), Some("site-1"));
        let mut v = Validation::new(Algorithm::HS256);
        v.set_audience(&["concert"]);
        v.leeway = 0;
        let read =
            jsonwebtoken::decode::<Read>(&jwt, &DecodingKey::from_secret(secret.as_bytes()), &v)
                .unwrap()
                .claims;
        assert_eq!(
            (read.sub.as_str(), read.aud.as_str()),
            ("acct-7", "concert")
        );
        assert_eq!((read.iat, read.exp), (now, now + LIFETIME_SECS));
        // Another secret does not verify it.
        assert!(
            jsonwebtoken::decode::<Read>(
                &jwt,
                &DecodingKey::from_secret(b"another-secret-16b"),
                &v
            )
            .is_err()
        );
    }

    #[test]
    fn a_key_is_one_kid_and_a_long_enough_secret() {
        for bad in [
            "",
            "nokid",
            ":0123456789abcdef",
            "k:short",
            "a,b:0123456789abcdef",
        ] {
            assert!(IdentityKey::parse(bad).is_err(), "{bad:?}");
        }
        assert!(IdentityKey::parse("k:0123456789abcdef").is_ok());
        // Of the origin's list, the first key (the one its site signs with).
        let first = IdentityKey::parse("k2:0123456789abcdef, k1:fedcba9876543210").unwrap();
        assert_eq!(first.kid(), "k2");
    }
}
