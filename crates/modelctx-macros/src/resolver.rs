//! `#[resolver]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{GenericArgument, ItemFn, PathArguments, ReturnType, Type};

use crate::common::{self, Options, ParamKind};

/// The names of question types: a return type whose (`Result`-unwrapped) last path segment is
/// one of these is put to the client; anything else is the resolved value itself.
const QUESTIONS: [&str; 5] = ["Elicit", "ElicitUrl", "Sample", "ListRoots", "Ask"];

/// `Some((ok, err))` for `Result<ok, err>`.
fn result_parts(ty: &Type) -> Option<(&Type, &Type)> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    Some((types.next()?, types.next()?))
}

fn is_question(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| QUESTIONS.iter().any(|q| s.ident == q)),
        _ => false,
    }
}

pub(crate) fn expand(options: &Options, mut item: ItemFn) -> syn::Result<TokenStream> {
    options.check(&[], &[])?;
    if let Some(literal) = &options.literal {
        return Err(syn::Error::new(
            literal.span(),
            "#[resolver] takes no arguments",
        ));
    }
    let params = common::params(&mut item, "#[resolver]")?;
    let ReturnType::Type(_, ret) = &item.sig.output else {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            "a resolver returns its value, or a question (`Elicit<T>`, `ElicitUrl`, `Sample`, \
             `ListRoots`, `Ask<Q>`)",
        ));
    };
    let ret = (**ret).clone();
    let (output_ty, wrap) = match result_parts(&ret) {
        Some((ok, _)) if is_question(ok) => (quote!(#ret), quote!(__mcp_output)),
        Some((ok, err)) => (
            quote!(::core::result::Result<::modelctx::__private::Ready<#ok>, #err>),
            quote!(__mcp_output.map(::modelctx::__private::Ready)),
        ),
        None if is_question(&ret) => (quote!(#ret), quote!(__mcp_output)),
        None => (
            quote!(::modelctx::__private::Ready<#ret>),
            quote!(::modelctx::__private::Ready(__mcp_output)),
        ),
    };
    let fn_name = item.sig.ident.to_string();
    let struct_name = &item.sig.ident;
    let resolution = quote!(__mcp_resolution);
    let resolve = common::resolve_params(
        &params,
        &resolution,
        &quote!(::core::result::Result::Err(
            ::modelctx::__private::Interrupt::Pending
        )),
    );
    let mut argument_uses = Vec::new();
    let mut argument_binds = Vec::new();
    let mut dependencies = Vec::new();
    for param in &params {
        let ident = &param.ident;
        let ty = &param.ty;
        let name = ident.to_string().trim_start_matches("r#").to_owned();
        match &param.kind {
            ParamKind::Argument => {
                let error = format!(
                    "resolver `{fn_name}` takes `{name}` by name, but `{name}` is not an argument \
                     of the tool, prompt or resource template that uses it; a resolver parameter \
                     must be a `&Context`, a `#[resolve(..)]` dependency, or an argument of its \
                     consumer"
                );
                argument_uses.push(quote! {
                    ::modelctx::__private::ArgumentUse { name: #name, error: #error }
                });
                argument_binds.push(quote! {
                    let #ident: #ty = #resolution.argument::<#ty>(#fn_name, #name)?;
                });
            }
            ParamKind::Resolved(path) => {
                dependencies.push(quote!(&<#path as ::modelctx::__private::Resolver>::INFO));
            }
            ParamKind::Context { .. } => {}
            ParamKind::State(_) => {
                return Err(syn::Error::new(
                    param.ident.span(),
                    format!(
                        "resolver `{fn_name}` takes `{name}: State<..>`; a resolver reads the \
                         server's state from its `&Context` (`ctx.state::<T>()`)"
                    ),
                ));
            }
        }
    }
    let call = common::call(&item, &params, &quote!(*#resolution.context()));
    let doc =
        format!("The [`{fn_name}()`] resolver: use it as `#[resolve({fn_name})]` on a parameter.");
    let registration = common::registration_type(&item, &doc);
    Ok(quote! {
        #item
        #registration
        const _: () = {
            impl ::modelctx::__private::Resolver for #struct_name {
                type Value = <#output_ty as ::modelctx::__private::ResolverOutput>::Value;

                const INFO: ::modelctx::__private::ResolverInfo =
                    ::modelctx::__private::ResolverInfo::new(
                        #fn_name,
                        ::core::concat!(::core::module_path!(), "::", #fn_name),
                    )
                    .with_arguments(&[#(#argument_uses),*])
                    .with_dependencies(&[#(#dependencies),*]);

                fn resolve(
                    #resolution: &::modelctx::__private::Resolution,
                ) -> ::modelctx::__private::BoxFuture<
                    '_,
                    ::core::result::Result<
                        ::modelctx::__private::Elicitation<Self::Value>,
                        ::modelctx::__private::Interrupt,
                    >,
                > {
                    ::modelctx::__private::boxed(async move {
                        #resolve
                        #(#argument_binds)*
                        let __mcp_output: #ret = #call;
                        ::modelctx::__private::ResolverOutput::into_outcome(
                            #wrap,
                            #resolution,
                            <Self as ::modelctx::__private::Resolver>::INFO.key(),
                        )
                        .await
                    })
                }
            }

            // Evaluated even when no consumer uses the resolver: a dependency cycle is a cycle
            // between these constants, reported by the compiler (E0391).
            const _: &::modelctx::__private::ResolverInfo =
                &<#struct_name as ::modelctx::__private::Resolver>::INFO;
        };
    })
}
