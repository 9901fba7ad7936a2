/** A post as the services hand it out: camelCase, transport-neutral. */
export interface Post {
  id: string;
  authorId: string;
  title: string;
  body: string;
  /** The body under its old GraphQL name (`Post.content`, deprecated): always equal to `body`. */
  content: string;
  createdAt: string;
  updatedAt: string;
}
