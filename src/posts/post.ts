/** A post as the services hand it out: camelCase, transport-neutral. */
export interface Post {
  id: string;
  authorId: string;
  title: string;
  body: string;
  createdAt: string;
  updatedAt: string;
}
