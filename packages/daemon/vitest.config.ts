// daemon's unit tests alone, for `pnpm mutation` (see scripts/unit-vitest-config.ts).
import { unitTestsConfig } from "../../scripts/unit-vitest-config.js";

export default unitTestsConfig(import.meta.dirname);
