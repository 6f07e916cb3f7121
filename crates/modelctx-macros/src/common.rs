//! Parsing shared by the four macros: attribute options, doc comments, parameters, types.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, ItemFn, Lit, LitStr, Meta, Pat, Path, ReturnType, Token, Type};

/// `#[x("literal", key = "value", flag)]`: an optional leading string, then options.
pub(crate) struct Options {
    pub(crate) literal: Option<LitStr>,
    pub(crate) pairs: Vec<(syn::Ident, Option<LitStr>)>,
}

impl Parse for Options {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let literal = if input.peek(LitStr) {
            let literal: LitStr = input.parse()?;
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            Some(literal)
        } else {
            None
        };
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated(input)?;
        let mut pairs = Vec::new();
        for meta in metas {
            match meta {
                Meta::Path(path) => pairs.push((single_ident(&path)?, None)),
                Meta::NameValue(nv) => {
                    let value = match &nv.value {
                        Expr::Lit(expr) => match &expr.lit {
                            Lit::Str(s) => s.clone(),
                            other => {
                                return Err(syn::Error::new(other.span(), "expected a string"));
                            }
                        },
                        other => return Err(syn::Error::new(other.span(), "expected a string")),
                    };
                    pairs.push((single_ident(&nv.path)?, Some(value)));
                }
                Meta::List(list) => {
                    return Err(syn::Error::new(list.span(), "unexpected option list"));
                }
            }
        }
        Ok(Self { literal, pairs })
    }
}

impl Options {
    /// Rejects options outside `allowed` (`name=` for valued, bare for flags).
    pub(crate) fn check(&self, valued: &[&str], flags: &[&str]) -> syn::Result<()> {
        for (ident, value) in &self.pairs {
            let name = ident.to_string();
            let ok = match value {
                Some(_) => valued.contains(&name.as_str()),
                None => flags.contains(&name.as_str()),
            };
            if !ok {
                let mut expected: Vec<String> =
                    valued.iter().map(|v| format!("`{v} = \"…\"`")).collect();
                expected.extend(flags.iter().map(|f| format!("`{f}`")));
                return Err(syn::Error::new(
                    ident.span(),
                    format!("unknown option `{name}`; expected {}", expected.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// Rejects a leading string: only `#[resource("uri")]` takes one.
    pub(crate) fn reject_literal(&self) -> syn::Result<()> {
        match &self.literal {
            Some(literal) => Err(syn::Error::new(
                literal.span(),
                "expected options (`name = \"…\"`), not a literal",
            )),
            None => Ok(()),
        }
    }

    pub(crate) fn value(&self, name: &str) -> Option<&LitStr> {
        self.pairs
            .iter()
            .find(|(ident, _)| ident == name)
            .and_then(|(_, v)| v.as_ref())
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        self.pairs
            .iter()
            .any(|(ident, v)| ident == name && v.is_none())
    }
}

fn single_ident(path: &Path) -> syn::Result<syn::Ident> {
    path.get_ident()
        .cloned()
        .ok_or_else(|| syn::Error::new(path.span(), "expected an option name"))
}

/// The doc comment of `attrs`, one paragraph per line, trimmed.
pub(crate) fn docs(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(expr) = &nv.value
            && let Lit::Str(s) = &expr.lit
        {
            let line = s.value();
            lines.push(line.strip_prefix(' ').unwrap_or(&line).to_owned());
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `Some(String::from(text))` or `None`, as tokens.
pub(crate) fn option_string(text: Option<String>) -> TokenStream {
    match text {
        Some(text) => quote!(::core::option::Option::Some(::std::string::String::from(#text))),
        None => quote!(::core::option::Option::None),
    }
}

/// How a parameter is filled.
pub(crate) enum ParamKind {
    /// The context, by value or by reference.
    Context { by_ref: bool },
    /// A `#[resolve(path)]` parameter.
    Resolved(Path),
    /// A `State<T>` parameter: a part of the server's state, `T`.
    State(Type),
    /// An argument (tool/prompt argument, template variable, or a resolver's by-name argument).
    Argument,
}

pub(crate) struct Param {
    pub(crate) ident: syn::Ident,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
    pub(crate) docs: Option<String>,
    /// `#[serde(..)]` / `#[schemars(..)]`, passed on to the generated field.
    pub(crate) passthrough: Vec<Attribute>,
}

/// Whether `ty` is `Context` or `&Context` (by the last path segment).
fn context_type(ty: &Type) -> Option<bool> {
    match ty {
        Type::Reference(reference) => context_type(&reference.elem)
            .filter(|by_ref| !by_ref)
            .map(|_| true),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            (last.ident == "Context" && last.arguments.is_none()).then_some(false)
        }
        _ => None,
    }
}

/// The `T` of `State<T>` (by the last path segment).
fn state_type(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if path.qself.is_some() || last.ident != "State" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    match arguments.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Type(inner)] => Some(inner.clone()),
        _ => None,
    }
}

/// Splits the parameters of `item`, stripping the attributes the macro consumed so the function
/// itself compiles unchanged.
pub(crate) fn params(item: &mut ItemFn, what: &str) -> syn::Result<Vec<Param>> {
    if !item.sig.generics.params.is_empty() || item.sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            item.sig.generics.span(),
            format!("{what} functions cannot be generic"),
        ));
    }
    let mut params = Vec::new();
    for input in &mut item.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new(
                    receiver.span(),
                    format!("{what} must be a free function, not a method"),
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => pat.ident.clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "parameters must be plain names (`name: Type`)",
                ));
            }
        };
        let mut resolved = None;
        let mut passthrough = Vec::new();
        let doc_text = docs(&typed.attrs);
        for attr in std::mem::take(&mut typed.attrs) {
            if attr.path().is_ident("resolve") {
                if resolved.is_some() {
                    return Err(syn::Error::new(attr.span(), "duplicate #[resolve]"));
                }
                let path: Path = attr.parse_args().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "expected `#[resolve(resolver)]`, a resolver's path",
                    )
                })?;
                resolved = Some(path);
            } else if attr.path().is_ident("serde") || attr.path().is_ident("schemars") {
                passthrough.push(attr);
            } else if attr.path().is_ident("doc") {
                // Consumed as the description.
            } else {
                return Err(syn::Error::new(
                    attr.span(),
                    "unsupported parameter attribute; expected doc comments, `#[resolve(..)]`, \
                     `#[serde(..)]` or `#[schemars(..)]`",
                ));
            }
        }
        let kind = match (resolved, context_type(&typed.ty), state_type(&typed.ty)) {
            (Some(path), _, _) => ParamKind::Resolved(path),
            (None, Some(by_ref), _) => ParamKind::Context { by_ref },
            (None, None, Some(inner)) => ParamKind::State(inner),
            (None, None, None) => ParamKind::Argument,
        };
        params.push(Param {
            ident,
            ty: (*typed.ty).clone(),
            kind,
            docs: doc_text,
            passthrough,
        });
    }
    Ok(params)
}

/// The return type (`()` when none).
pub(crate) fn return_type(item: &ItemFn) -> Type {
    match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    }
}

/// Whether `ty` names `Outcome` or `InputRequiredResult` anywhere: a signature that declares it
/// may ask for input by hand.
pub(crate) fn declares_input_required(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(ident) => {
                ident == "Outcome" || ident == "InputRequiredResult"
            }
            proc_macro2::TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// Whether `ty` is `Option<…>` (by the last path segment).
pub(crate) fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Option"),
        _ => false,
    }
}

/// Calls the user's function with the parameters bound to locals of the same names.
pub(crate) fn call(item: &ItemFn, params: &[Param], context: &TokenStream) -> TokenStream {
    let name = &item.sig.ident;
    let arguments = params.iter().map(|p| match p.kind {
        ParamKind::Context { by_ref: true } => quote!(&#context),
        ParamKind::Context { by_ref: false } => quote!(::core::clone::Clone::clone(&#context)),
        _ => {
            let ident = &p.ident;
            quote!(#ident)
        }
    });
    let await_ = item.sig.asyncness.map(|_| quote!(.await));
    quote!(#name(#(#arguments),*) #await_)
}

/// Gathers every `#[resolve]` parameter (all of them, so that independent questions are asked in
/// one round), then binds each to its declared type. `on_pending` is the expression returned
/// while a question is pending.
pub(crate) fn resolve_params(
    params: &[Param],
    resolution: &TokenStream,
    on_pending: &TokenStream,
) -> TokenStream {
    let resolved: Vec<(&Param, &Path)> = params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Resolved(path) => Some((p, path)),
            _ => None,
        })
        .collect();
    if resolved.is_empty() {
        return TokenStream::new();
    }
    let slots: Vec<syn::Ident> = (0..resolved.len())
        .map(|i| syn::Ident::new(&format!("__mcp_outcome_{i}"), Span::call_site()))
        .collect();
    let gathers = resolved.iter().zip(&slots).map(|((_, path), slot)| {
        quote! {
            let #slot = ::modelctx::__private::gather(
                #resolution.resolve::<#path>().await,
                &mut __mcp_pending,
            )?;
        }
    });
    let binds = resolved.iter().zip(&slots).map(|((param, path), slot)| {
        let ident = &param.ident;
        let ty = &param.ty;
        let name = ident.to_string();
        quote! {
            let #ident: #ty = <#ty as ::modelctx::__private::FromElicitation<
                <#path as ::modelctx::__private::Resolver>::Value,
            >>::from_elicitation(::modelctx::__private::gathered(#slot)?, #name)?;
        }
    });
    quote! {
        let mut __mcp_pending = false;
        #(#gathers)*
        if __mcp_pending {
            return #on_pending;
        }
        #(#binds)*
    }
}

/// `let app: State<T> = state::<T>(&ctx)?;` for each `State<T>` parameter.
pub(crate) fn bind_states(params: &[Param], context: &TokenStream) -> TokenStream {
    let binds = params.iter().filter_map(|p| match &p.kind {
        ParamKind::State(inner) => {
            let ident = &p.ident;
            Some(quote! {
                let #ident: ::modelctx::__private::State<#inner> =
                    ::modelctx::__private::state::<#inner>(&#context)?;
            })
        }
        _ => None,
    });
    quote!(#(#binds)*)
}

/// `impl<S> UsesState<S> for name where T: FromRef<S>, …`: the parts of the server's state the
/// function takes, one bound per `State<T>` parameter — the compile-time check that the
/// server's state can give them.
pub(crate) fn uses_state(struct_name: &syn::Ident, params: &[Param]) -> TokenStream {
    let parts: Vec<&Type> = params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::State(inner) => Some(inner),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        return quote! {
            impl<__McpS> ::modelctx::__private::UsesState<__McpS> for #struct_name {}
        };
    }
    quote! {
        impl<__McpS> ::modelctx::__private::UsesState<__McpS> for #struct_name
        where
            #(#parts: ::modelctx::__private::FromRef<__McpS>
                + ::core::clone::Clone + ::core::marker::Send + ::core::marker::Sync + 'static,)*
        {
            fn provide(state: &__McpS, states: &mut ::modelctx::__private::States) {
                #(states.insert::<#parts>(
                    <#parts as ::modelctx::__private::FromRef<__McpS>>::from_ref(state),
                );)*
            }
        }
    }
}

/// `&[&<r as Resolver>::INFO, …]` for the resolved parameters.
pub(crate) fn resolver_infos(params: &[Param]) -> TokenStream {
    let infos = params.iter().filter_map(|p| match &p.kind {
        ParamKind::Resolved(path) => {
            Some(quote!(&<#path as ::modelctx::__private::Resolver>::INFO))
        }
        _ => None,
    });
    quote!(&[#(#infos),*])
}

/// The generated args struct: one field per argument parameter.
pub(crate) fn args_struct(params: &[Param], schema: bool) -> TokenStream {
    let fields = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .map(|p| {
            let ident = &p.ident;
            let ty = &p.ty;
            let attrs = &p.passthrough;
            let doc = p.docs.as_ref().map(|d| quote!(#[doc = #d]));
            quote!(#doc #(#attrs)* #ident: #ty,)
        });
    let schema_derive = schema.then(|| {
        quote! {
            #[derive(::modelctx::__private::schemars::JsonSchema)]
            #[schemars(crate = "::modelctx::__private::schemars")]
        }
    });
    quote! {
        #[derive(::modelctx::__private::serde::Deserialize)]
        #[serde(crate = "::modelctx::__private::serde")]
        #schema_derive
        #[allow(non_camel_case_types, dead_code)]
        struct __McpArgs { #(#fields)* }
    }
}

/// `let __McpArgs { a, b, .. } = …;` binding the argument parameters to locals.
pub(crate) fn bind_args(params: &[Param], source: &TokenStream) -> TokenStream {
    let idents = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .map(|p| &p.ident);
    quote! {
        let __McpArgs { #(#idents,)* } =
            ::modelctx::__private::decode_arguments::<__McpArgs>(&#source)?;
    }
}

/// The names of the argument parameters, for the compile-time resolver check.
pub(crate) fn argument_names(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .map(|p| p.ident.to_string().trim_start_matches("r#").to_owned())
        .collect()
}

/// The registration type: a braced struct named like the function. It lives in the type
/// namespace, so it coexists with the function (which stays callable as written).
pub(crate) fn registration_type(item: &ItemFn, doc: &str) -> TokenStream {
    let vis = &item.vis;
    let name = &item.sig.ident;
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #name {}
    }
}
