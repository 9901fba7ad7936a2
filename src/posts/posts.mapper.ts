import type { PostResponse } from './dto/post.response.js';
import type { Post } from '../domain/post.js';

/** A post value; `content` (the body's old name) is always set from `body` (here and in postFromRow). */
export function postOf(fields: Omit<Post, 'content'>): Post {
  return { ...fields, content: fields.body };
}

/** REST body of a post (snake_case). */
export function toRestPost(post: Post): PostResponse {
  return {
    id: post.id,
    author_id: post.authorId,
    title: post.title,
    body: post.body,
    created_at: post.createdAt,
    updated_at: post.updatedAt,
  };
}
