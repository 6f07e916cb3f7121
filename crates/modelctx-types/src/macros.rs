//! Declarative macros that generate the wire structs.
//!
//! Why not `#[derive(Deserialize)]` with `#[serde(flatten)] extra: Map`? Flatten makes serde buffer
//! every object into an intermediate `Content` tree before it is decoded (the same cost that makes
//! `untagged` slow), and MCP needs unknown members preserved on almost every object. These macros
//! generate a direct map visitor instead: known keys decode straight into their fields, unknown
//! keys go to `extra`, nothing is buffered, and known keys never allocate.

/// Declares a wire object: named members decoded into typed fields, every other member kept in
/// `extra` so that it survives a round trip.
///
/// Each field is `req "wireName" => field: Type` (a missing member is an error) or
/// `opt "wireName" => field: Type` (stored as `Option<Type>`, omitted when `None`).
/// An optional `@tag "key" = "value";` line declares a discriminator member (for example
/// `"type": "text"`): it is always written first, and on reading it must equal the value when
/// present.
///
/// The struct is `#[non_exhaustive]`: a member a later revision adds is a new field, and a new
/// field must not break the users who build these values. They build them with the generated
/// constructor and setters instead of struct literals:
/// - `new(req fields…)`: the `req` fields in declaration order, each `impl Into<T>`; every `opt`
///   field `None`, `extra` empty;
/// - `with_<field>(value)` for every field, chainable: `impl Into<T>`, stored as `Some` for `opt`
///   fields.
///
/// An optional `@own new;` / `@own setters;` / `@own new, setters;` line (after `@tag`) skips
/// generating the constructor or the setters for a type that writes its own (a `new` with other
/// arguments or defaults, or setters whose names the generated ones would take).
macro_rules! wire_struct {
    (@constructor [] $name:ident ($($params:tt)*) [] $body:tt) => {
        impl $name {
            /// A value with the required members given (in declaration order), every optional
            /// member absent and no unknown members.
            #[inline]
            pub fn new($($params)*) -> Self $body
        }
    };
    (@constructor [] $name:ident ($($params:tt)*) [req $field:ident $ty:ty, $($rest:tt)*] $body:tt) => {
        wire_struct!(@constructor [] $name ($($params)* $field: impl Into<$ty>,) [$($rest)*] $body);
    };
    (@constructor [] $name:ident ($($params:tt)*) [opt $field:ident $ty:ty, $($rest:tt)*] $body:tt) => {
        wire_struct!(@constructor [] $name ($($params)*) [$($rest)*] $body);
    };
    (@constructor [new $($more:ident)*] $($ignore:tt)*) => {};
    (@constructor [$other:ident $($more:ident)*] $($args:tt)*) => {
        wire_struct!(@constructor [$($more)*] $($args)*);
    };
    (@init req $field:ident) => { ::core::convert::Into::into($field) };
    (@init opt $field:ident) => { None };
    (@setters [] $name:ident $($kind:ident $wire:literal $field:ident $ty:ty,)*) => {
        ::pastey::paste! {
            impl $name {
                $(
                    #[doc = concat!("Sets `", $wire, "`.")]
                    #[must_use]
                    #[inline]
                    pub fn [<with_ $field>](mut self, value: impl Into<$ty>) -> Self {
                        self.$field = wire_struct!(@set $kind value);
                        self
                    }
                )*
            }
        }
    };
    (@setters [setters $($more:ident)*] $($ignore:tt)*) => {};
    (@setters [$other:ident $($more:ident)*] $($args:tt)*) => {
        wire_struct!(@setters [$($more)*] $($args)*);
    };
    (@set req $value:ident) => { $value.into() };
    (@set opt $value:ident) => { Some($value.into()) };
    (
        $(#[$smeta:meta])*
        $vis:vis struct $name:ident {
            $(@tag $tag_key:literal = $tag_value:literal;)?
            $(@own $($own:ident),+;)*
            $(
                $(#[$fmeta:meta])*
                $kind:ident $wire:literal => $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$smeta])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        $vis struct $name {
            $(
                $(#[$fmeta])*
                pub $field: wire_struct!(@ty $kind $ty),
            )*
            /// Members this version of the SDK does not model, kept verbatim so they survive a
            /// round trip. Must not repeat the names of the typed fields.
            pub extra: $crate::Extra,
        }

        impl $name {
            /// The wire names of the members this type models (the discriminator included).
            pub const WIRE_FIELDS: &'static [&'static str] = &[$($tag_key,)? $($wire),*];
        }

        wire_struct!(@constructor [$($($own)+)*] $name () [$($kind $field $ty,)*] {
            Self { $($field: wire_struct!(@init $kind $field),)* extra: $crate::Extra::new() }
        });
        wire_struct!(@setters [$($($own)+)*] $name $($kind $wire $field $ty,)*);

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(None)?;
                $( map.serialize_entry($tag_key, $tag_value)?; )?
                $( wire_struct!(@ser $kind map $wire self.$field); )*
                for (key, value) in &self.extra {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[allow(non_camel_case_types)]
                enum __Field {
                    $( #[doc = $tag_key] __Tag, )?
                    $($field,)*
                    __Extra(String),
                }
                struct __FieldVisitor;
                impl ::serde::de::Visitor<'_> for __FieldVisitor {
                    type Value = __Field;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, key: &str) -> Result<__Field, E> {
                        Ok(match key {
                            $($tag_key => __Field::__Tag,)?
                            $($wire => __Field::$field,)*
                            other => __Field::__Extra(other.to_owned()),
                        })
                    }
                }
                impl<'de> ::serde::Deserialize<'de> for __Field {
                    fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        d.deserialize_identifier(__FieldVisitor)
                    }
                }

                struct __Visitor;
                impl<'de> ::serde::de::Visitor<'de> for __Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("an object (", stringify!($name), ")"))
                    }
                    #[allow(unused_mut)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        $( let mut $field: Option<$ty> = None; )*
                        let mut extra = $crate::Extra::new();
                        while let Some(key) = map.next_key::<__Field>()? {
                            match key {
                                $(__Field::__Tag => {
                                    let _ = $tag_key;
                                    let value: ::std::borrow::Cow<'de, str> =
                                        map.next_value::<$crate::macros::CowStr<'de>>()?.0;
                                    if value != $tag_value {
                                        return Err(<A::Error as ::serde::de::Error>::invalid_value(
                                            ::serde::de::Unexpected::Str(&value),
                                            &concat!("\"", $tag_value, "\" as ", $tag_key),
                                        ));
                                    }
                                })?
                                $(__Field::$field => {
                                    if $field.is_some() {
                                        return Err(<A::Error as ::serde::de::Error>::duplicate_field($wire));
                                    }
                                    $field = wire_struct!(@de $kind map $wire $ty);
                                })*
                                __Field::__Extra(key) => {
                                    let value: ::serde_json::Value = map.next_value()?;
                                    extra.insert(key, value);
                                }
                            }
                        }
                        Ok($name {
                            $( $field: wire_struct!(@finish $kind $field $wire A), )*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(__Visitor)
            }
        }
    };
    (@ty req $ty:ty) => { $ty };
    (@ty opt $ty:ty) => { Option<$ty> };
    (@ser req $map:ident $wire:literal $value:expr) => { $map.serialize_entry($wire, &$value)?; };
    (@ser opt $map:ident $wire:literal $value:expr) => {
        if let Some(value) = &$value { $map.serialize_entry($wire, value)?; }
    };
    // A member that does not decode names itself ("clientCapabilities: elicitation: invalid
    // type…"): nested wire structs build the path one member at a time, without the cost of a
    // path-tracking deserializer on the happy path.
    (@de req $map:ident $wire:literal $ty:ty) => {
        Some($map.next_value::<$ty>().map_err(|e| $crate::macros::in_member($wire, e))?)
    };
    (@de opt $map:ident $wire:literal $ty:ty) => {
        $map.next_value::<Option<$ty>>().map_err(|e| $crate::macros::in_member($wire, e))?
    };
    (@finish req $field:ident $wire:literal $a:ident) => {
        match $field {
            Some(value) => value,
            None => return Err(<$a::Error as ::serde::de::Error>::missing_field($wire)),
        }
    };
    (@finish opt $field:ident $wire:literal $a:ident) => { $field };
}

/// Declares an open string set: a newtype over `Cow<'static, str>` with associated constants
/// for the values the spec defines. Unknown values are kept rather than rejected, so one new
/// value never fails a whole message (rmcp's closed `Role` enum did exactly that).
macro_rules! open_str {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$cmeta:meta])* const $konst:ident = $value:literal; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis struct $name(::std::borrow::Cow<'static, str>);

        impl $name {
            $( $(#[$cmeta])* pub const $konst: Self = Self(::std::borrow::Cow::Borrowed($value)); )*

            /// The values this SDK knows, in the order the spec lists them.
            pub const KNOWN: &'static [&'static str] = &[$($value),*];

            /// Wraps any value; known values are stored without allocating.
            pub fn new(value: impl Into<::std::borrow::Cow<'static, str>>) -> Self {
                let value = value.into();
                match &*value {
                    $( $value => Self::$konst, )*
                    _ => Self(value),
                }
            }

            /// The string on the wire.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the value is one the spec defines.
            pub fn is_known(&self) -> bool {
                Self::KNOWN.contains(&self.as_str())
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl From<&'static str> for $name {
            fn from(value: &'static str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = $crate::macros::CowStr::deserialize(deserializer)?.0;
                Ok(match &*value {
                    $( $value => Self::$konst, )*
                    _ => Self(::std::borrow::Cow::Owned(value.into_owned())),
                })
            }
        }
    };
}

/// Declares a union discriminated by a string member (`"type"`, `"method"`).
///
/// Decoding reads the object once into a `serde_json::Value`, looks the discriminator up, and
/// decodes the variant from that value. The discriminator can sit anywhere in the object (Python
/// peers sort keys, so `"type"` usually comes last), which rules out a streaming dispatch; the
/// buffering stays confined to these small unions and never touches the request hot path.
macro_rules! tagged_union {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident by $tag:literal {
            $( $(#[$vmeta:meta])* $value:literal => $variant:ident($inner:ty), )*
        }
        $(unknown: $(#[$umeta:meta])* $unknown:ident;)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant($inner), )*
            $( $(#[$umeta])* $unknown($crate::Extra), )?
        }

        impl $name {
            /// The discriminator of this variant.
            pub fn tag(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $value, )*
                    $( Self::$unknown(map) => map.get($tag).and_then(|v| v.as_str()).unwrap_or(""), )?
                }
            }
        }

        $( impl From<$inner> for $name {
            fn from(value: $inner) -> Self {
                Self::$variant(value)
            }
        } )*

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(inner) => inner.serialize(serializer), )*
                    $( Self::$unknown(map) => map.serialize(serializer), )?
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use ::serde::de::Error as _;
                let map = $crate::Extra::deserialize(deserializer)?;
                let tag = match map.get($tag) {
                    Some(::serde_json::Value::String(tag)) => tag.as_str(),
                    Some(_) => return Err(D::Error::custom(concat!("`", $tag, "` must be a string"))),
                    None => return Err(D::Error::missing_field($tag)),
                };
                match tag {
                    $( $value => <$inner as ::serde::Deserialize>::deserialize(
                            ::serde_json::Value::Object(map),
                        )
                        .map(Self::$variant)
                        .map_err(D::Error::custom), )*
                    $( _ => Ok(Self::$unknown(map)), )?
                    #[allow(unreachable_patterns)]
                    other => Err(D::Error::custom(format_args!(
                        concat!("unknown ", stringify!($name), " `", $tag, "` {:?}"), other
                    ))),
                }
            }
        }
    };
}

/// A string that borrows from the input when it can (no escapes) and allocates otherwise.
#[derive(Debug)]
#[doc(hidden)]
pub struct CowStr<'de>(pub std::borrow::Cow<'de, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

/// The error of a member that did not decode, prefixed with the member's name. serde_json
/// appends the position (" at line L column C") to an error once; it is dropped here so that
/// the outer map adds it once, after the whole path.
#[doc(hidden)]
#[cold]
#[allow(clippy::needless_pass_by_value, reason = "called from map_err")]
pub fn in_member<E: serde::de::Error>(member: &str, error: E) -> E {
    let text = error.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if text[at..].contains(" column ") => &text[..at],
        _ => &text,
    };
    E::custom(format_args!("{member}: {message}"))
}
