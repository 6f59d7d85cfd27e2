//! The `--rooms` file: rooms and the performances they sell, applied at
//! start. It sits in the origin because it joins the two layers below it:
//! room settings and booking's performance specs.

use booking::PerformanceSpec;
use room::{RoomId, RoomSettings, SettingsError};
use serde::Deserialize;

/// A room's id with its settings, as listed in the `--rooms` file.
#[derive(Clone, Debug, PartialEq)]
pub struct RoomSpec {
    /// The room.
    pub id: RoomId,
    /// Its settings.
    pub settings: RoomSettings,
    /// What it sells: `[[room.performances]]` with an `id` and the admin
    /// API's performance fields.
    pub performances: Vec<(String, PerformanceSpec)>,
}

/// The `--rooms` file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RoomsFileError {
    /// Not TOML, or not the expected shape.
    #[error("not a valid rooms file: {0}")]
    Parse(String),
    /// An entry's id is missing or malformed.
    #[error("room #{index}: `id` must match ^[a-z0-9][a-z0-9-]{{0,63}}$")]
    BadId {
        /// 1-based entry number.
        index: usize,
    },
    /// An entry names the same room as an earlier one.
    #[error("room `{0}` is listed twice")]
    Duplicate(String),
    /// A setting is out of range.
    #[error("room `{room}`: {source}")]
    Settings {
        /// The room.
        room: String,
        /// What is wrong.
        source: SettingsError,
    },
}

/// Parses a rooms file: `[[room]]` tables, each with an `id` and any of the
/// admin API's setting names.
pub fn parse_rooms_file(text: &str) -> Result<Vec<RoomSpec>, RoomsFileError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        room: Vec<toml::Table>,
    }
    let file: File = toml::from_str(text).map_err(|e| RoomsFileError::Parse(e.to_string()))?;
    let mut specs: Vec<RoomSpec> = Vec::with_capacity(file.room.len());
    for (i, mut table) in file.room.into_iter().enumerate() {
        let id = table
            .remove("id")
            .and_then(|v| v.as_str().and_then(RoomId::parse))
            .ok_or(RoomsFileError::BadId { index: i + 1 })?;
        let mut performances = Vec::new();
        if let Some(list) = table.remove("performances") {
            let toml::Value::Array(list) = list else {
                return Err(RoomsFileError::Parse(format!(
                    "room `{id}`: `performances` must be a list of tables ([[room.performances]])"
                )));
            };
            for entry in list {
                let toml::Value::Table(mut entry) = entry else {
                    return Err(RoomsFileError::Parse(format!(
                        "room `{id}`: each performance is a table"
                    )));
                };
                let perf_id = entry
                    .remove("id")
                    .and_then(|v| v.as_str().filter(|p| token::is_valid_room(p)).map(str::to_owned))
                    .ok_or_else(|| {
                        RoomsFileError::Parse(format!(
                            "room `{id}`: a performance's `id` must match ^[a-z0-9][a-z0-9-]{{0,63}}$"
                        ))
                    })?;
                let spec: PerformanceSpec = entry.try_into().map_err(|e: toml::de::Error| {
                    RoomsFileError::Parse(format!(
                        "room `{id}`, performance `{perf_id}`: {}",
                        e.message()
                    ))
                })?;
                if performances.iter().any(|(p, _)| *p == perf_id) {
                    return Err(RoomsFileError::Parse(format!(
                        "room `{id}`: performance `{perf_id}` is listed twice"
                    )));
                }
                performances.push((perf_id, spec));
            }
        }
        let settings: RoomSettings = table.try_into().map_err(|e: toml::de::Error| {
            RoomsFileError::Parse(format!("room `{id}`: {}", e.message()))
        })?;
        settings
            .validate()
            .map_err(|source| RoomsFileError::Settings {
                room: id.to_string(),
                source,
            })?;
        if specs.iter().any(|s| s.id == id) {
            return Err(RoomsFileError::Duplicate(id.to_string()));
        }
        specs.push(RoomSpec {
            id,
            settings,
            performances,
        });
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooms_file() {
        let specs = parse_rooms_file(
            r#"
            [[room]]
            id = "concert"
            capacity = 5
            opens_at = "2030-01-01T12:00:00Z"

            [[room]]
            id = "drop"
            max_line = 100
            "#,
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].settings.capacity, 5);
        assert_eq!(specs[0].settings.opens_at_ms(), Some(1_893_499_200_000));
        assert_eq!(specs[1].settings.max_line, Some(100));
        assert_eq!(specs[1].settings.capacity, 100);
    }

    #[test]
    fn performances_take_the_admin_fields() {
        let file = r#"
            [[room]]
            id = "concert"

            [[room.performances]]
            id = "night"
            title = "Night"
            starts_at = "2030-01-01T19:00:00Z"
            max_seats_per_account = 2
            sections = [{ name = "A", rows = 1, seats_per_row = 4, price = 100 }]

            [[room.performances]]
            id = "matinee"
            title = "Matinee"
            starts_at = "2030-01-01T14:00:00Z"
            sections = [{ name = "A", rows = 1, seats_per_row = 4, price = 100 }]
            "#;
        let specs = parse_rooms_file(file).unwrap();
        let perfs = &specs[0].performances;
        assert_eq!(perfs[0].0, "night");
        assert_eq!(perfs[0].1.max_seats_per_account, Some(2));
        assert_eq!(perfs[0].1.max_seats_per_hold, 4);
        assert_eq!(perfs[1].1.max_seats_per_account, None);
        let negative = file.replace("max_seats_per_account = 2", "max_seats_per_account = -1");
        assert!(parse_rooms_file(&negative).is_err());
    }

    #[test]
    fn rooms_file_errors() {
        let cases = [
            "[[room]]\ncapacity = 5",
            "[[room]]\nid = \"Bad\"",
            "[[room]]\nid = \"a\"\ncapacty = 5",
            "[[room]]\nid = \"a\"\ncapacity = -1",
            "[[room]]\nid = \"a\"\ncapacity = \"many\"",
            "[[room]]\nid = \"a\"\n[[room]]\nid = \"a\"",
            "[[room]]\nid = \"a\"\nabandon_seconds = 1",
            "[[rooms]]\nid = \"a\"",
            "not toml",
        ];
        for text in cases {
            assert!(parse_rooms_file(text).is_err(), "{text}");
        }
    }
}
