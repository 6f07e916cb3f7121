//! What `#[tool]`, `#[prompt]` and `#[resource]` share: reading the function (parameters,
//! return type, name, title, description) and generating its definition — the args struct, the
//! registration struct, the trait impl and the body that decodes the arguments, resolves the
//! `#[resolve]` parameters, calls the function and classifies its result.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

use crate::common::{self, Options, Param, ParamKind};

/// The three handler macros; each names its definition trait, its result trait and its builder
/// method after itself.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    /// `tool`: the builder method (`.tool::<f>()`) and the label `body_outcome` reports under.
    fn word(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
        }
    }

    /// The definition trait's handler method (`call`, `get`, `read`), the parameters it takes
    /// between the context and the arguments (a resource's URI), and its result type.
    fn method(self) -> (syn::Ident, TokenStream, syn::Ident) {
        let (name, extra, result) = match self {
            Self::Tool => ("call", TokenStream::new(), "CallToolResult"),
            Self::Prompt => ("get", TokenStream::new(), "GetPromptResult"),
            Self::Resource => (
                "read",
                quote!(__mcp_uri: ::std::string::String,),
                "ReadResourceResult",
            ),
        };
        (format_ident!("{name}"), extra, format_ident!("{result}"))
    }

    /// `ToolDefinition` and `IntoToolResult`, in `::modelctx::__private`.
    fn traits(self) -> (syn::Ident, syn::Ident) {
        let stem = match self {
            Self::Tool => "Tool",
            Self::Prompt => "Prompt",
            Self::Resource => "Resource",
        };
        (
            format_ident!("{stem}Definition"),
            format_ident!("Into{stem}Result"),
        )
    }
}

/// A handler function as the macro reads it.
pub(crate) struct Handler {
    pub(crate) kind: Kind,
    pub(crate) params: Vec<Param>,
    pub(crate) ret: Type,
    pub(crate) fn_name: String,
    pub(crate) uses_resolvers: bool,
    /// The `name` option, else the function's name.
    pub(crate) name: String,
    /// `Option<String>` tokens: the `title` option.
    pub(crate) title: TokenStream,
    /// `Option<String>` tokens: the `description` option, else the doc comment.
    pub(crate) description: TokenStream,
}

impl Handler {
    /// Reads `item`'s parameters (stripping the attributes the macro consumes), return type and
    /// the `name`, `title` and `description` options.
    pub(crate) fn read(kind: Kind, options: &Options, item: &mut ItemFn) -> syn::Result<Self> {
        let params = common::params(item, &format!("#[{}]", kind.word()))?;
        let ret = common::return_type(item);
        let uses_resolvers = params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Resolved(_)));
        let fn_name = item.sig.ident.to_string();
        let name = options
            .value("name")
            .map_or_else(|| fn_name.clone(), syn::LitStr::value);
        let description = common::option_string(
            options
                .value("description")
                .map(syn::LitStr::value)
                .or_else(|| common::docs(&item.attrs)),
        );
        let title = common::option_string(options.value("title").map(syn::LitStr::value));
        Ok(Self {
            kind,
            params,
            ret,
            fn_name,
            uses_resolvers,
            name,
            title,
            description,
        })
    }

    /// Rejects `#[resolve]` parameters together with a return type that may ask for input by
    /// hand: a call has one input channel. `what` names the handler in the message (`tool`,
    /// `resource template`).
    pub(crate) fn check_one_input_channel(&self, what: &str) -> syn::Result<()> {
        if self.uses_resolvers && common::declares_input_required(&self.ret) {
            return Err(syn::Error::new(
                self.ret.span(),
                format!(
                    "{what} `{}` combines #[resolve] parameters with an InputRequiredResult \
                     return; a call has one input channel, so drive the multi-round flow either \
                     by resolvers or by the body, not both",
                    self.fn_name
                ),
            ));
        }
        Ok(())
    }

    /// The handler method, `fn call(__mcp_ctx: Context, __mcp_arguments: Extra) ->
    /// HandlerFuture<CallToolResult>` for a tool (see [`Kind::method`]). Its body binds the
    /// arguments (and the context), resolves the `#[resolve]` parameters, calls the function into
    /// `__mcp_output`, and passes `outcome` (an expression over `__mcp_output`) to `body_outcome`
    /// under `label` (the name, or a resource's URI).
    pub(crate) fn method(&self, item: &ItemFn, label: &str, outcome: &TokenStream) -> TokenStream {
        let (method, extra, result) = self.kind.method();
        let params = &self.params;
        let ret = &self.ret;
        let kind = self.kind.word();
        let uses_resolvers = self.uses_resolvers;
        let bind = common::bind_args(params, &quote!(__mcp_arguments));
        let bind_states = common::bind_states(params, &quote!(__mcp_ctx));
        let resolution = quote!(__mcp_resolution);
        let resolve = common::resolve_params(
            params,
            &resolution,
            &quote!(::modelctx::__private::pending(&#resolution)),
        );
        let start_resolution = uses_resolvers.then(|| {
            quote! {
                let #resolution = ::modelctx::__private::Resolution::new(
                    ::core::clone::Clone::clone(&__mcp_ctx),
                    __mcp_arguments,
                );
            }
        });
        let call = common::call(item, params, &quote!(__mcp_ctx));
        quote! {
            fn #method(
                __mcp_ctx: ::modelctx::__private::Context,
                #extra
                __mcp_arguments: ::modelctx::__private::Extra,
            ) -> ::modelctx::__private::HandlerFuture<::modelctx::__private::#result> {
                ::modelctx::__private::boxed(async move {
                    #bind
                    #bind_states
                    #start_resolution
                    #resolve
                    let __mcp_output: #ret = #call;
                    ::modelctx::__private::body_outcome(#kind, #label, #uses_resolvers, #outcome)
                })
            }
        }
    }

    /// The expansion: the function as written, its registration struct, the args struct
    /// (deriving `JsonSchema` when `schema`), the definition trait impl with `methods`, and the
    /// compile-time check that every resolver's by-name parameter is one of `arguments`.
    pub(crate) fn expand(
        &self,
        item: &ItemFn,
        schema: bool,
        arguments: &[String],
        methods: &TokenStream,
    ) -> TokenStream {
        let kind = self.kind.word();
        let (definition, into_result) = self.kind.traits();
        let fn_name = &self.fn_name;
        let doc = format!(
            "Registers the [`{fn_name}()`] {kind}: `McpServer::builder(..).{kind}::<{fn_name}>()`."
        );
        let registration = common::registration_type(item, &doc);
        let args_struct = common::args_struct(&self.params, schema);
        let infos = common::resolver_infos(&self.params);
        let struct_name = &item.sig.ident;
        let ret = &self.ret;
        let uses_state = common::uses_state(struct_name, &self.params);
        quote! {
            #item
            #registration
            const _: () = {
                #args_struct

                impl ::modelctx::__private::#definition for #struct_name {
                    const RESOLVERS: &'static [&'static ::modelctx::__private::ResolverInfo] = #infos;
                    const ASKS: bool = <#ret as ::modelctx::__private::#into_result>::ASKS;

                    #methods
                }

                #uses_state

                const _: () = ::modelctx::__private::check_resolvers(
                    <#struct_name as ::modelctx::__private::#definition>::RESOLVERS,
                    &[#(#arguments),*],
                );
            };
        }
    }
}
