// How the classifier stops: at the first construct that is not read-only, with the reason.

/** Thrown inside the classifier to stop at the first construct that is not read-only. Never escapes. */
export class Rejection {
  constructor(readonly reason: string) {}
}

export function reject(reason: string): never {
  throw new Rejection(reason);
}
