//! The `Set-Cookie` values the origin writes: a ticket or entry cookie, and
//! the one that deletes it (sent with the error that found it stale).

use axum::http::HeaderValue;

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, and Secure when
/// `secure` (the state's `secure_cookies`, from configuration). Written by
/// hand, in the `cookie` crate's attribute order (a test holds the two to
/// the same text): building a `Cookie` and formatting it cost a join a few
/// allocations more, for attributes that never vary.
pub fn set_cookie(name: &str, value: &str, max_age_secs: u64, secure: bool) -> HeaderValue {
    let max_age = i64::try_from(max_age_secs).unwrap_or(i64::MAX);
    let mut cookie = String::with_capacity(name.len() + value.len() + 64);
    cookie.push_str(name);
    cookie.push('=');
    cookie.push_str(value);
    cookie.push_str("; HttpOnly; SameSite=Lax");
    if secure {
        cookie.push_str("; Secure");
    }
    cookie.push_str("; Path=/; Max-Age=");
    // itoa, not `write!`: the formatter cost a join a few hundred
    // instructions for one number.
    cookie.push_str(itoa::Buffer::new().format(max_age));
    // Names are validated room ids and values base64url tokens.
    HeaderValue::try_from(cookie).unwrap_or(HeaderValue::from_static(""))
}

/// A `Set-Cookie` value that deletes the cookie.
pub fn clear_cookie(name: &str) -> HeaderValue {
    set_cookie(name, "", 0, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum_extra::extract::cookie::{Cookie, SameSite};

    /// What the `cookie` crate writes for the same attributes.
    fn reference(name: &str, value: &str, max_age: u64, secure: bool) -> String {
        Cookie::build((name.to_owned(), value.to_owned()))
            .http_only(true)
            .same_site(SameSite::Lax)
            .path("/")
            .secure(secure)
            .max_age(time::Duration::seconds(
                i64::try_from(max_age).unwrap_or(i64::MAX),
            ))
            .build()
            .to_string()
    }

    #[test]
    fn set_cookie_writes_what_the_cookie_crate_writes() {
        let token = "AQEFYmVuY2gJY29zdC1qb2lu.FbRXuYoyqUduYLSlWOmS37qbF0M";
        for (name, value, max_age, secure) in [
            ("wr_ticket_concert", token, 86_400, false),
            ("wr_entry_concert", token, 60, true),
            ("wr_ticket_a", "", 0, false),
            ("wr_entry_a-1", token, u64::MAX, true),
        ] {
            let ours = set_cookie(name, value, max_age, secure);
            assert_eq!(
                ours.to_str().unwrap(),
                reference(name, value, max_age, secure)
            );
        }
        assert_eq!(
            clear_cookie("wr_ticket_a").to_str().unwrap(),
            "wr_ticket_a=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"
        );
    }
}
