/** Signatures of a11y-check.js (in-page functions: plain JavaScript, since the project's TypeScript has no DOM). */
export function findA11yFaults(): string[];
export function focusStop(): { name: string; onScreen: boolean; ring: boolean };
export function focusedName(): string;
export function blurFocus(): void;
export function composerFocused(): boolean;
