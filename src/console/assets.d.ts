/** esbuild bundles the imported CSS into console.css. */
declare module "*.css";
