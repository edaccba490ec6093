/** The Markdown sections of a handoff file, in file order, and the field each one holds. */
export const handoffSections = [
  { heading: "Context", field: "context" },
  { heading: "State", field: "state" },
  { heading: "What I need", field: "what_i_need" },
  { heading: "Resume prompt", field: "resume_prompt" },
] as const;

export type HandoffSectionField = (typeof handoffSections)[number]["field"];
