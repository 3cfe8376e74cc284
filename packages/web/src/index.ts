// @forkd/web: the live web view of forkd's event streams. The page itself is built into dist/public
// (app/ holds its sources); this module serves it.
export type { WebPageConfig } from "./config.js";
export { webConfigProblem } from "./config.js";
export type { WebErrorCode } from "./errors.js";
export { WebError } from "./errors.js";
export type { RunningWebServer, WebServerOptions } from "./server.js";
export { startWebServer, webAssetsDir } from "./server.js";
