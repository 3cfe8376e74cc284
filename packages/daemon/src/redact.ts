// Credentials never reach a log line or an error message: a NATS or HTTP URL may carry a user and a
// password (`nats://user:secret@host`), and the client echoes the URL when it cannot connect.

// `scheme://user:password@` or `scheme://token@`: the part before `@` is a credential.
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:"']+)(?::([^\s/@"']*))?@/gi;

/**
 * Replaces the credentials of every URL in `text`: a password becomes `***` (the user stays, to
 * tell accounts apart), a lone user-info part (a token) becomes `***`.
 */
export function redactCredentials(text: string): string {
  return text.replace(
    URL_CREDENTIALS,
    (_match, scheme: string, user: string, password: string | undefined) =>
      password === undefined ? `${scheme}***@` : `${scheme}${user}:***@`,
  );
}
