//! Maps whose order matters (a pod's requests and labels, a flavor's capacity): both engines iterate
//! them in the order the Python side sent, so they word reasons and break ties identically.

use serde::Deserialize;

pub type Pairs<V> = Vec<(String, V)>;

/// Reads a map that must keep its order (a pod's requests, labels) from either a JSON object, in
/// document order, or a list of `[key, value]` pairs.
pub fn ordered<'de, D, V>(deserializer: D) -> Result<Pairs<V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Ordered<V>(std::marker::PhantomData<V>);

    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Ordered<V> {
        type Value = Pairs<V>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object or a list of [key, value] pairs")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(entry) = map.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(entry) = seq.next_element()? {
                out.push(entry);
            }
            Ok(out)
        }
    }

    deserializer.deserialize_any(Ordered(std::marker::PhantomData))
}

pub fn lookup<'a, V>(pairs: &'a [(String, V)], key: &str) -> Option<&'a V> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}
