export type { BridgeSkillErrorCode } from "./bridge-skill-error";
export { BridgeSkillError } from "./bridge-skill-error";
export { BRIDGE_SKILL_NAME, bridgeSkillPath } from "./bridge-skill-path";
export type { InstalledBridgeSkill } from "./install-bridge-skill";
export { installBridgeSkill } from "./install-bridge-skill";
