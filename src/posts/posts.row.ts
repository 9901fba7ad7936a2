import type { Post } from '../domain/post.js';

/** A `posts` row as the repository's raw SQL reads it (`POST_COLUMNS`), and the `Post` it holds. */
export interface PostRow {
  id: string;
  author_id: string;
  title: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export const POST_COLUMNS = 'id, author_id, title, body, created_at, updated_at';

export function postFromRow(row: PostRow): Post {
  return {
    id: row.id,
    authorId: row.author_id,
    title: row.title,
    body: row.body,
    content: row.body,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
