/**
 * Team and OAuth-client wire types (spec Team group and "Authentication" 4; paths and fields "not shown",
 * decided in docs/team-and-oauth.md "Team" and "Connect an app with OAuth").
 */

/**
 * A member's role: `owner`, `admin`, `developer` or `viewer` (docs/team-and-oauth.md "Team" lists what each may approve).
 */
export type TeamRole = 'owner' | 'admin' | 'developer' | 'viewer';

/** A member of the organization (never the password). */
export interface TeamMember {
  /** e.g. `mem_3fK9…` */
  id: string;
  email: string;
  name: string;
  role: TeamRole;
  /** @format date-time */
  createdAt: string;
}

/** A page of members. */
export interface TeamMemberList {
  items: TeamMember[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `PATCH /team/members/{id}` (updateTeamMember).
 * @additionalProperties false
 */
export interface TeamMemberUpdate {
  role: TeamRole;
}

/**
 * Request body of `POST /team/invitations` (createTeamInvitation).
 * @additionalProperties false
 */
export interface TeamInvitationCreate {
  /**
   * Where the invitation is sent; it becomes the member's sign-in name.
   * @minLength 3
   * @maxLength 254
   */
  email: string;
  role: TeamRole;
}

/** An invitation (never its token, which only the email carries). */
export interface TeamInvitation {
  /** e.g. `inv_3fK9…` */
  id: string;
  email: string;
  role: TeamRole;
  /** The member who invited, or null when an API key did. */
  invitedBy: string | null;
  /** @format date-time */
  expiresAt: string;
  /** @format date-time */
  createdAt: string;
}

/** A page of pending invitations. */
export interface TeamInvitationList {
  items: TeamInvitation[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Answer of removeTeamMember and revokeTeamInvitation. */
export interface TeamRemoval {
  id: string;
  removed: true;
}

/** An OAuth app's standing approval by one member. */
export interface OAuthGrantView {
  /** e.g. `ogr_3fK9…` */
  id: string;
  clientId: string;
  memberId: string;
  scopes: string[];
  /** @format date-time */
  createdAt: string;
}

/** A page of grants. */
export interface OAuthGrantList {
  items: OAuthGrantView[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /oauth-clients` (createOAuthClient).
 * @additionalProperties false
 */
export interface OAuthClientCreate {
  /**
   * Shown to members on the consent page.
   * @minLength 1
   * @maxLength 100
   */
  name: string;
  /**
   * Exact redirect URIs (https, or http on a loopback host); the authorization request must name one of
   * them character for character.
   * @minItems 1
   * @maxItems 10
   */
  redirectUris: OAuthRedirectUri[];
  /**
   * `true` (default): a server-side app holding a client secret; `false`: a public app (browser, mobile,
   * CLI) with no secret, which must use PKCE S256.
   */
  confidential?: boolean;
  /**
   * The most the app may ever ask for; none reserved.
   * @minItems 1
   * @maxItems 60
   * @uniqueItems true
   */
  scopes: OAuthScope[];
}

/**
 * One redirect URI.
 * @minLength 1
 * @maxLength 2000
 */
export type OAuthRedirectUri = string;

/**
 * A scope name, e.g. `agents:read`.
 * @pattern ^[a-z_]+:[a-z_]+$
 * @maxLength 64
 */
export type OAuthScope = string;

/** A registered OAuth client (never its secret). */
export interface OAuthClientView {
  /** The `client_id`, e.g. `oac_3fK9…` */
  id: string;
  name: string;
  confidential: boolean;
  redirectUris: string[];
  scopes: string[];
  /** @format date-time */
  createdAt: string;
}

/** A new client with its secret, shown only in this answer (201 of createOAuthClient). */
export interface OAuthClientWithSecret extends OAuthClientView {
  /** The `client_secret` `<brand>_ocs_…` of a confidential client (null for a public one): store it now. */
  clientSecret: string | null;
}

/** A page of OAuth clients. */
export interface OAuthClientList {
  items: OAuthClientView[];
  nextCursor: string | null;
  hasMore: boolean;
}
