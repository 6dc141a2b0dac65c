//! A `query_range` answer read as it streams in: each series' labels, then each of its
//! points handed to a sink, so a large answer is folded into the review's windows without
//! ever being held (a quarter of a large fleet is hundreds of MiB of JSON).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Where each point goes: the series' labels, its time (Unix seconds) and its value as the
/// server wrote it.
pub(crate) type Sink<'a> =
    dyn FnMut(&BTreeMap<String, String>, f64, &str) -> Result<(), String> + 'a;

/// What an answer said besides its points.
#[derive(Default)]
pub(crate) struct Status {
    pub status: String,
    pub error_type: Option<String>,
    pub error: Option<String>,
    pub result_type: Option<String>,
}

/// Read one answer into `sink`.
pub(crate) fn read(r: &mut dyn std::io::Read, sink: &mut Sink<'_>) -> Result<Status, String> {
    let mut de = serde_json::Deserializer::from_reader(r);
    let status = Envelope { sink }
        .deserialize(&mut de)
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(status)
}

struct Envelope<'s, 'a> {
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Envelope<'_, '_> {
    type Value = Status;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Status, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Envelope<'_, '_> {
    type Value = Status;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Prometheus API answer")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Status, A::Error> {
        let mut s = Status::default();
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "status" => s.status = m.next_value()?,
                "errorType" => s.error_type = m.next_value()?,
                "error" => s.error = m.next_value()?,
                "data" => {
                    s.result_type = m.next_value_seed(Data {
                        sink: &mut *self.sink,
                    })?
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(s)
    }
}

struct Data<'s, 'a> {
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Data<'_, '_> {
    type Value = Option<String>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Data<'_, '_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the answer's data")
    }
    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Option<String>, A::Error> {
        let mut result_type = None;
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "resultType" => result_type = Some(m.next_value::<String>()?),
                "result" => m.next_value_seed(Series {
                    sink: &mut *self.sink,
                    many: true,
                })?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(result_type)
    }
}

/// The series of a matrix (`many`), or one series' map.
struct Series<'s, 'a> {
    sink: &'s mut Sink<'a>,
    many: bool,
}

impl<'de> DeserializeSeed<'de> for Series<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.many {
            d.deserialize_seq(self)
        } else {
            d.deserialize_map(self)
        }
    }
}

impl<'de> Visitor<'de> for Series<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a matrix of series")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s
            .next_element_seed(Series {
                sink: &mut *self.sink,
                many: false,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        // Prometheus writes `metric` before `values`; points that come first are kept until
        // the labels are known.
        let mut metric: Option<BTreeMap<String, String>> = None;
        let mut early: Vec<(f64, String)> = Vec::new();
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "metric" => {
                    let labels: BTreeMap<String, String> = m.next_value()?;
                    for (t, v) in early.drain(..) {
                        (self.sink)(&labels, t, &v).map_err(de::Error::custom)?;
                    }
                    metric = Some(labels);
                }
                "values" => match &metric {
                    Some(labels) => m.next_value_seed(Points {
                        labels,
                        sink: &mut *self.sink,
                    })?,
                    None => early = m.next_value()?,
                },
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Points<'l, 's, 'a> {
    labels: &'l BTreeMap<String, String>,
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Points<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Points<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("points [time, \"value\"]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some((t, v)) = s.next_element::<(f64, String)>()? {
            (self.sink)(self.labels, t, &v).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_reach_the_sink_with_their_series_whatever_the_key_order() {
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"pod":"a"},"values":[[60,"1"],[120,"0.5"]]},
            {"values":[[60,"2"]],"metric":{"pod":"b"}}]}}"#;
        let mut got = Vec::new();
        let s = read(&mut &body[..], &mut |l, t, v| {
            got.push((l["pod"].clone(), t, v.to_owned()));
            Ok(())
        })
        .expect("reads");
        assert_eq!(s.status, "success");
        assert_eq!(s.result_type.as_deref(), Some("matrix"));
        assert_eq!(
            got,
            [
                ("a".to_owned(), 60.0, "1".to_owned()),
                ("a".to_owned(), 120.0, "0.5".to_owned()),
                ("b".to_owned(), 60.0, "2".to_owned())
            ]
        );
        // A truncated answer is an error, not a short one.
        assert!(read(&mut &body[..body.len() - 10], &mut |_, _, _| Ok(())).is_err());
    }
}
